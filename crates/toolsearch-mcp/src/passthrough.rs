//! Upstream resources, resource templates and prompts, passed through to the gateway's clients
//! under names that cannot collide across sources.
//!
//! - A resource `URI` of source `S` is offered as `toolsearch://S/URI` (`S` percent-encoded
//!   where it is not URI-safe); a template `T` as `toolsearch://S/T`. Reading such a URI reads
//!   `URI` from `S`; the contents come back under the offered URI.
//! - A prompt `P` of source `S` is offered as the canonical name of (`S`, `P`): every `_` of `S`
//!   becomes `_u`, then `__`, then `P` (`everything` / `simple-prompt` →
//!   `everything__simple-prompt`), the same rule as tool names.
//!
//! Lists gather every connected upstream that offers them, in config order, each upstream's
//! pages followed; the gateway answers with one page. An upstream that fails or does not answer
//! within [`LIST_TIMEOUT`] is left out of that list (and logged). A session with context headers
//! reaches an upstream through its own connection, as its tool calls do.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, Reference, ResultType, SubscribeRequestParams, UnsubscribeRequestParams,
};
use serde_json::Value;
use toolsearch::Session;

use crate::Gateway;
use crate::gateway::Follower;
pub use crate::offered::{prompt_name, resource_uri, split_prompt_name, split_resource_uri};
use crate::upstream::{Upstream, describe};

/// Longest wait for one upstream's list, or for a read or a prompt.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// Rewrites `key` of each object of `items` with `f`.
fn rewrite(items: &mut [Value], key: &str, f: impl Fn(&str) -> String) {
    for item in items {
        if let Some(Value::String(v)) = item.get_mut(key) {
            *v = f(v);
        }
    }
}

fn json_array<T: serde::Serialize>(items: &[T]) -> Vec<Value> {
    items
        .iter()
        .filter_map(|i| serde_json::to_value(i).ok())
        .collect()
}

fn from_json<T: serde::de::DeserializeOwned>(items: Vec<Value>) -> Vec<T> {
    items
        .into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect()
}

/// What a list asks of one upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Resources,
    Templates,
    Prompts,
}

impl Kind {
    fn offered(self, upstream_caps: &rmcp::model::ServerCapabilities) -> bool {
        match self {
            Kind::Resources | Kind::Templates => upstream_caps.resources.is_some(),
            Kind::Prompts => upstream_caps.prompts.is_some(),
        }
    }
}

async fn upstream_for(
    upstream: &Arc<Upstream>,
    session: &Arc<Session>,
) -> Result<Arc<Upstream>, String> {
    upstream
        .for_session(session)
        .await
        .map_err(|e| e.to_string())
}

/// One upstream's whole list of `kind`, as JSON objects with the offered names of `source`
/// (the upstream's own names without one).
async fn list_one(
    source: Option<&str>,
    upstream: &Arc<Upstream>,
    session: &Arc<Session>,
    kind: Kind,
) -> Result<Vec<Value>, String> {
    let upstream = upstream_for(upstream, session).await?;
    let caps = upstream.capabilities().await.unwrap_or_default();
    if !kind.offered(&caps) {
        return Ok(Vec::new());
    }
    let peer = upstream
        .peer()
        .await
        .ok_or_else(|| "not connected".to_owned())?;
    let listed = async {
        match kind {
            Kind::Resources => peer.list_all_resources().await.map(|v| json_array(&v)),
            Kind::Templates => peer
                .list_all_resource_templates()
                .await
                .map(|v| json_array(&v)),
            Kind::Prompts => peer.list_all_prompts().await.map(|v| json_array(&v)),
        }
    };
    let mut items = tokio::time::timeout(LIST_TIMEOUT, listed)
        .await
        .map_err(|_| format!("no answer within {LIST_TIMEOUT:?}"))?
        .map_err(|e| describe(&e))?;
    let Some(source) = source else {
        return Ok(items);
    };
    match kind {
        Kind::Resources => rewrite(&mut items, "uri", |u| resource_uri(source, u)),
        Kind::Templates => rewrite(&mut items, "uriTemplate", |u| resource_uri(source, u)),
        Kind::Prompts => rewrite(&mut items, "name", |n| prompt_name(source, n)),
    }
    Ok(items)
}

/// Every connected upstream's list of `kind`, in config order.
async fn list_all(gateway: &Gateway, session: &Arc<Session>, kind: Kind) -> Vec<Value> {
    gateway.await_sources().await;
    let upstreams = gateway.connected_upstreams();
    let lists = futures_util::future::join_all(
        upstreams
            .iter()
            .map(|(source, upstream)| list_one(Some(source), upstream, session, kind)),
    )
    .await;
    let mut out = Vec::new();
    for ((source, _), list) in upstreams.iter().zip(lists) {
        match list {
            Ok(items) => out.extend(items),
            Err(e) => {
                tracing::warn!(source = %source, error = %e, ?kind, "upstream left out of the list")
            }
        }
    }
    out
}

/// `resources/list` over every upstream.
pub async fn list_resources(gateway: &Gateway, session: &Arc<Session>) -> ListResourcesResult {
    let mut result = ListResourcesResult::default();
    result.resources = from_json(list_all(gateway, session, Kind::Resources).await);
    result
}

/// `resources/templates/list` over every upstream.
pub async fn list_resource_templates(
    gateway: &Gateway,
    session: &Arc<Session>,
) -> ListResourceTemplatesResult {
    let mut result = ListResourceTemplatesResult::default();
    result.resource_templates = from_json(list_all(gateway, session, Kind::Templates).await);
    result
}

/// `prompts/list` over every upstream.
pub async fn list_prompts(gateway: &Gateway, session: &Arc<Session>) -> ListPromptsResult {
    let mut result = ListPromptsResult::default();
    result.prompts = from_json(list_all(gateway, session, Kind::Prompts).await);
    result
}

/// The names of the sources connected now.
fn connected_names(gateway: &Gateway) -> Vec<String> {
    gateway
        .connected_upstreams()
        .into_iter()
        .map(|(s, _)| s)
        .collect()
}

/// The live peer of the upstream named `source`, reached as `session` reaches it.
async fn peer_of(
    gateway: &Gateway,
    session: &Arc<Session>,
    source: &str,
) -> Result<rmcp::service::Peer<rmcp::RoleClient>, McpError> {
    let not_connected = || {
        McpError::internal_error(
            format!("source {source} is not connected now; try again later"),
            None,
        )
    };
    let upstream = gateway
        .connected_upstreams()
        .into_iter()
        .find(|(s, _)| s == source)
        .map(|(_, u)| u)
        .ok_or_else(not_connected)?;
    let upstream = upstream_for(&upstream, session)
        .await
        .map_err(|e| McpError::internal_error(e, None))?;
    upstream.peer().await.ok_or_else(not_connected)
}

/// Awaits one upstream request for at most [`LIST_TIMEOUT`]; its own JSON-RPC error (unknown
/// resource, bad prompt arguments) passes through unchanged.
async fn within<T>(
    source: &str,
    request: impl Future<Output = Result<T, rmcp::service::ServiceError>>,
) -> Result<T, McpError> {
    match tokio::time::timeout(LIST_TIMEOUT, request).await {
        Err(_) => Err(McpError::internal_error(
            format!("source {source} did not answer within {LIST_TIMEOUT:?}"),
            None,
        )),
        Ok(Err(rmcp::service::ServiceError::McpError(data))) => Err(data),
        Ok(Err(e)) => Err(McpError::internal_error(
            format!("source {source} failed: {}", describe(&e)),
            None,
        )),
        Ok(Ok(v)) => Ok(v),
    }
}

fn unknown(what: &str, offered: &str, form: &str, list: &str) -> McpError {
    McpError::invalid_params(
        format!("unknown {what} {offered:?}: they are offered as {form} (list them with {list})"),
        None,
    )
}

/// `resources/read` of an offered URI, or of a URI as its upstream names it (see
/// [`locate`]); the contents come back under the name the client used.
pub async fn read_resource(
    gateway: &Gateway,
    session: &Arc<Session>,
    mut request: ReadResourceRequestParams,
) -> Result<ReadResourceResult, McpError> {
    let (source, own, renamed) = locate(gateway, session, Name::Resource(&request.uri)).await?;
    let peer = peer_of(gateway, session, &source).await?;
    request.uri = own;
    let mut read = within(&source, peer.read_resource(request)).await?;
    if renamed {
        let mut contents = json_array(&read.contents);
        rewrite(&mut contents, "uri", |u| resource_uri(&source, u));
        read.contents = from_json(contents);
    }
    read.result_type = Some(ResultType::COMPLETE);
    Ok(read)
}

/// `prompts/get` of an offered prompt name, or of a name as its upstream names it (see
/// [`locate`]).
pub async fn get_prompt(
    gateway: &Gateway,
    session: &Arc<Session>,
    mut request: GetPromptRequestParams,
) -> Result<GetPromptResult, McpError> {
    let (source, own, _) = locate(gateway, session, Name::Prompt(&request.name)).await?;
    let peer = peer_of(gateway, session, &source).await?;
    request.name = own;
    let mut got = within(&source, peer.get_prompt(request)).await?;
    got.result_type = Some(ResultType::COMPLETE);
    Ok(got)
}

/// A name a client used for something an upstream offers.
#[derive(Debug, Clone, Copy)]
enum Name<'a> {
    /// A resource's URI.
    Resource(&'a str),
    /// A resource template's URI template.
    Template(&'a str),
    /// A prompt's name.
    Prompt(&'a str),
}

impl Name<'_> {
    fn what(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Name::Resource(_) => ("resource", "toolsearch://<source>/<uri>", "resources/list"),
            Name::Template(_) => (
                "resource template",
                "toolsearch://<source>/<template>",
                "resources/templates/list",
            ),
            Name::Prompt(_) => ("prompt", "<source>__<prompt>", "prompts/list"),
        }
    }
}

/// The source a client's name points at, the upstream's own name for it, and whether the
/// client used the offered (renamed) form. The offered form (`toolsearch://<source>/<uri>`,
/// `<source>__<prompt>`) is read directly. A name as the upstream itself gives it (a URI a tool
/// returned, a prompt name a client kept from using the server directly) is taken when exactly
/// one connected upstream lists it (a resource by its URI or by a template it matches); when
/// several do, the answer says so and names the offered form.
async fn locate(
    gateway: &Gateway,
    session: &Arc<Session>,
    name: Name<'_>,
) -> Result<(String, String, bool), McpError> {
    gateway.await_sources().await;
    let names = connected_names(gateway);
    let sources = names.iter().map(String::as_str);
    let offered = match name {
        Name::Resource(u) | Name::Template(u) => split_resource_uri(u, sources),
        Name::Prompt(p) => split_prompt_name(p, sources),
    };
    if let Some((source, own)) = offered {
        return Ok((source.to_owned(), own.to_owned(), true));
    }
    let (what, form, list) = name.what();
    let (kind, given) = match name {
        Name::Resource(u) => (Kind::Resources, u),
        Name::Template(u) => (Kind::Templates, u),
        Name::Prompt(p) => (Kind::Prompts, p),
    };
    let upstreams = gateway.connected_upstreams();
    let lists = futures_util::future::join_all(upstreams.iter().map(|(source, upstream)| async {
        let mut found = own_list(upstream, session, kind)
            .await
            .is_ok_and(|items| items.iter().any(|i| lists_name(i, name)));
        // A URI no resource has may still be one of a template's.
        if !found && matches!(name, Name::Resource(_)) {
            found = own_list(upstream, session, Kind::Templates)
                .await
                .is_ok_and(|items| {
                    items.iter().any(|i| {
                        i.get("uriTemplate")
                            .and_then(Value::as_str)
                            .is_some_and(|t| template_matches(t, given))
                    })
                });
        }
        found.then(|| source.clone())
    }))
    .await;
    let found: Vec<String> = lists.into_iter().flatten().collect();
    match found.as_slice() {
        [source] => Ok((source.clone(), given.to_owned(), false)),
        [] => Err(unknown(what, given, form, list)),
        several => Err(McpError::invalid_params(
            format!(
                "{what} {given:?} is offered by several sources ({}); name it as {form} (list them with {list})",
                several.join(", ")
            ),
            None,
        )),
    }
}

/// Whether a listed item (as JSON, under the upstream's own names) is the one `name` names.
fn lists_name(item: &Value, name: Name<'_>) -> bool {
    let (key, given) = match name {
        Name::Resource(u) => ("uri", u),
        Name::Template(u) => ("uriTemplate", u),
        Name::Prompt(p) => ("name", p),
    };
    item.get(key).and_then(Value::as_str) == Some(given)
}

/// Whether `uri` is one of the URIs of RFC 6570 template `template`: its literal parts in
/// order, each `{name}` one or more characters other than `/` (`{+name}` and `{#name}` any).
fn template_matches(template: &str, uri: &str) -> bool {
    fn go(template: &str, uri: &str) -> bool {
        let Some(open) = template.find('{') else {
            return template == uri;
        };
        let Some(rest) = uri.strip_prefix(&template[..open]) else {
            return false;
        };
        let Some(close) = template[open..].find('}').map(|c| open + c) else {
            return false;
        };
        let expr = &template[open + 1..close];
        let after = &template[close + 1..];
        let any = expr.starts_with('+') || expr.starts_with('#');
        (1..=rest.len())
            .filter(|&n| rest.is_char_boundary(n))
            .take_while(|&n| any || !rest[..n].contains('/'))
            .any(|n| go(after, &rest[n..]))
    }
    go(template, uri)
}

/// One upstream's whole list of `kind` under its own names.
async fn own_list(
    upstream: &Arc<Upstream>,
    session: &Arc<Session>,
    kind: Kind,
) -> Result<Vec<Value>, String> {
    list_one(None, upstream, session, kind).await
}

/// A subscription to an offered URI (`resources/subscribe`, or a URI of a
/// `subscriptions/listen`): `follower` follows it, and its upstream is asked to send updates
/// when this is the first to follow it there. Updates come back under the name the follower
/// used.
#[allow(deprecated)] // the upstream's subscription is the handshake era's `resources/subscribe`
pub(crate) async fn subscribe(
    gateway: &Gateway,
    session: &Arc<Session>,
    follower: &Follower,
    offered: &str,
) -> Result<(), McpError> {
    let (source, own, renamed) = locate(gateway, session, Name::Resource(offered)).await?;
    let peer = peer_of(gateway, session, &source).await?;
    if gateway
        .clients()
        .subscribe(follower, &source, &own, renamed)
    {
        let params = SubscribeRequestParams::new(own.clone());
        if let Err(e) = within(&source, peer.subscribe(params)).await {
            gateway.clients().unsubscribe(follower, &source, &own);
            return Err(e);
        }
    }
    Ok(())
}

/// The end of a subscription to an offered URI; the upstream is told when nobody follows it
/// any more.
#[allow(deprecated)] // the upstream's subscription is the handshake era's `resources/subscribe`
pub(crate) async fn unsubscribe(
    gateway: &Gateway,
    session: &Arc<Session>,
    follower: &Follower,
    offered: &str,
) -> Result<(), McpError> {
    let (source, own, _) = locate(gateway, session, Name::Resource(offered)).await?;
    if gateway.clients().unsubscribe(follower, &source, &own) {
        let peer = peer_of(gateway, session, &source).await?;
        within(
            &source,
            peer.unsubscribe(UnsubscribeRequestParams::new(own)),
        )
        .await?;
    }
    Ok(())
}

/// The resources one `subscriptions/listen` stream follows (2026-07-28): each is subscribed to
/// as `resources/subscribe` would, and all are let go when the stream ends.
#[derive(Debug)]
pub(crate) struct Following<'a> {
    gateway: &'a Gateway,
    session: Arc<Session>,
    follower: &'a Follower,
    followed: parking_lot::Mutex<Vec<String>>,
}

impl<'a> Following<'a> {
    /// What `follower` (a stream of `session`'s) follows: nothing yet.
    pub(crate) fn new(gateway: &'a Gateway, session: Arc<Session>, follower: &'a Follower) -> Self {
        Self {
            gateway,
            session,
            follower,
            followed: parking_lot::Mutex::new(Vec::new()),
        }
    }

    /// Follows the resource offered as `uri`; one no source has, or whose source refuses, is
    /// logged and not followed (the stream has no way to say so to the client).
    pub(crate) async fn follow(&self, uri: &str) {
        match subscribe(self.gateway, &self.session, self.follower, uri).await {
            Ok(()) => self.followed.lock().push(uri.to_owned()),
            Err(e) => {
                tracing::info!(uri, error = %e.message, "a subscriptions/listen resource cannot be followed")
            }
        }
    }

    /// Lets every followed resource go (its upstream is told when nobody follows it any more).
    pub(crate) async fn end(self) {
        let followed = std::mem::take(&mut *self.followed.lock());
        for uri in followed {
            if let Err(e) = unsubscribe(self.gateway, &self.session, self.follower, &uri).await {
                tracing::debug!(uri, error = %e.message, "an upstream subscription could not be ended");
            }
        }
    }
}

/// `completion/complete` for an offered prompt name or resource template, asked of its source
/// under its own name.
pub(crate) async fn complete(
    gateway: &Gateway,
    session: &Arc<Session>,
    mut request: CompleteRequestParams,
) -> Result<CompleteResult, McpError> {
    let name = match &request.r#ref {
        Reference::Prompt(prompt) => Name::Prompt(&prompt.name),
        Reference::Resource(template) => Name::Template(&template.uri),
        _ => {
            return Err(McpError::invalid_params(
                "completion/complete: this kind of reference cannot be passed on",
                None,
            ));
        }
    };
    let (source, own, _) = locate(gateway, session, name).await?;
    match &mut request.r#ref {
        Reference::Prompt(prompt) => prompt.name = own,
        Reference::Resource(template) => template.uri = own,
        _ => {}
    }
    let peer = peer_of(gateway, session, &source).await?;
    let mut done = within(&source, peer.complete(request)).await?;
    done.result_type = Some(ResultType::COMPLETE);
    Ok(done)
}
