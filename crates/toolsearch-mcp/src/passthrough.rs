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
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResult, ResultType,
};
use serde_json::Value;
use toolsearch::catalog::canonical_name;
use toolsearch::exec::Session;

use crate::Gateway;
use crate::upstream::{Upstream, describe};

/// Longest wait for one upstream's list, or for a read or a prompt.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(30);

const SCHEME: &str = "toolsearch://";

fn encode_source(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    for b in source.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The URI (or URI template) under which source `source` offers `uri`.
pub fn resource_uri(source: &str, uri: &str) -> String {
    format!("{SCHEME}{}/{uri}", encode_source(source))
}

/// The source among `sources` and its own URI, for an offered URI.
pub fn split_resource_uri<'a, 'u>(
    offered: &'u str,
    sources: impl IntoIterator<Item = &'a str>,
) -> Option<(&'a str, &'u str)> {
    let rest = offered.strip_prefix(SCHEME)?;
    sources.into_iter().find_map(|s| {
        let own = rest
            .strip_prefix(encode_source(s).as_str())?
            .strip_prefix('/')?;
        Some((s, own))
    })
}

/// The name under which source `source` offers prompt `name`.
pub fn prompt_name(source: &str, name: &str) -> String {
    canonical_name(source, name)
}

/// The source among `sources` and its own prompt name, for an offered name.
pub fn split_prompt_name<'a, 'n>(
    offered: &'n str,
    sources: impl IntoIterator<Item = &'a str>,
) -> Option<(&'a str, &'n str)> {
    sources
        .into_iter()
        .find_map(|s| Some((s, offered.strip_prefix(canonical_name(s, "").as_str())?)))
}

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

/// One upstream's whole list of `kind`, as JSON objects with the offered names.
async fn list_one(
    source: &str,
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
    match kind {
        Kind::Resources => rewrite(&mut items, "uri", |u| resource_uri(source, u)),
        Kind::Templates => rewrite(&mut items, "uriTemplate", |u| resource_uri(source, u)),
        Kind::Prompts => rewrite(&mut items, "name", |n| prompt_name(source, n)),
    }
    Ok(items)
}

/// Every connected upstream's list of `kind`, in config order.
async fn list_all(gateway: &Gateway, session: &Arc<Session>, kind: Kind) -> Vec<Value> {
    let upstreams = gateway.connected_upstreams();
    let lists = futures_util::future::join_all(
        upstreams
            .iter()
            .map(|(source, upstream)| list_one(source, upstream, session, kind)),
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

/// `resources/read` of an offered URI.
pub async fn read_resource(
    gateway: &Gateway,
    session: &Arc<Session>,
    mut request: ReadResourceRequestParams,
) -> Result<ReadResourceResult, McpError> {
    let names = connected_names(gateway);
    let offered = request.uri.clone();
    let (source, own) =
        split_resource_uri(&offered, names.iter().map(String::as_str)).ok_or_else(|| {
            unknown(
                "resource",
                &offered,
                "toolsearch://<source>/<uri>",
                "resources/list",
            )
        })?;
    let peer = peer_of(gateway, session, source).await?;
    request.uri = own.to_owned();
    let mut read = within(source, peer.read_resource(request)).await?;
    let mut contents = json_array(&read.contents);
    rewrite(&mut contents, "uri", |u| resource_uri(source, u));
    read.contents = from_json(contents);
    read.result_type = Some(ResultType::COMPLETE);
    Ok(read)
}

/// `prompts/get` of an offered prompt name.
pub async fn get_prompt(
    gateway: &Gateway,
    session: &Arc<Session>,
    mut request: GetPromptRequestParams,
) -> Result<GetPromptResult, McpError> {
    let names = connected_names(gateway);
    let offered = request.name.clone();
    let (source, own) = split_prompt_name(&offered, names.iter().map(String::as_str))
        .ok_or_else(|| unknown("prompt", &offered, "<source>__<prompt>", "prompts/list"))?;
    let peer = peer_of(gateway, session, source).await?;
    request.name = own.to_owned();
    let mut got = within(source, peer.get_prompt(request)).await?;
    got.result_type = Some(ResultType::COMPLETE);
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_uris_round_trip_and_never_collide() {
        let sources = ["fs", "fs2", "my src", "a_b"];
        for s in sources {
            for uri in ["file:///etc/hosts", "demo://resource/static/document/1", ""] {
                let offered = resource_uri(s, uri);
                assert!(offered.starts_with(SCHEME), "{offered}");
                assert_eq!(split_resource_uri(&offered, sources), Some((s, uri)));
            }
        }
        assert_eq!(resource_uri("my src", "x"), "toolsearch://my%20src/x");
        // "fs" must not claim "fs2"'s resources.
        assert_eq!(
            split_resource_uri("toolsearch://fs2/x", ["fs", "fs2"]),
            Some(("fs2", "x"))
        );
        assert_eq!(split_resource_uri("file:///x", sources), None);
        assert_eq!(split_resource_uri("toolsearch://other/x", sources), None);
    }

    #[test]
    fn prompt_names_round_trip_and_never_collide() {
        // With plain concatenation "a_" + "_b" and "a" + "__b" would be the same name.
        let sources = ["a", "a_", "everything", "my_tools"];
        for s in sources {
            for p in ["simple-prompt", "_b", "x__y"] {
                let offered = prompt_name(s, p);
                assert_eq!(
                    split_prompt_name(&offered, sources),
                    Some((s, p)),
                    "{offered}"
                );
            }
        }
        assert_eq!(
            prompt_name("everything", "simple-prompt"),
            "everything__simple-prompt"
        );
        assert_ne!(prompt_name("a_", "b"), prompt_name("a", "_b"));
        assert_eq!(split_prompt_name("nobody__x", sources), None);
    }
}
