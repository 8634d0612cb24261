//! Session ids that name their replica. Behind a load balancer, a legacy (initialize-handshake)
//! session lives in the memory of the replica that opened it, so every later request of the
//! session must reach that replica. With a replica name (`serve --http --replica a`), session
//! ids read `a.<uuid>`: the balancer routes by that prefix (docs/operations.md gives the nginx
//! `map`), and requests without a session (`initialize`, stateless 2026-07-28 clients) go to
//! any replica. This wraps rmcp's [`LocalSessionManager`], adding and stripping the prefix; a
//! session id of another replica is simply unknown here (404, as for an expired session).

use std::pin::Pin;
use std::sync::Arc;

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::{RestoreOutcome, SessionId};

/// Whether `name` can name a replica: 1 to 63 ASCII lowercase letters, digits or `-` (a DNS label, as a pod name is).
pub fn replica_name_problem(name: &str) -> Option<String> {
    let ok = (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    (!ok).then(|| format!("replica name {name:?} must be 1 to 63 lowercase letters, digits or '-'"))
}

/// rmcp's in-memory sessions, their ids prefixed with this replica's name.
#[derive(Debug)]
pub struct ReplicaSessions {
    /// The sessions (ids without the prefix).
    pub inner: LocalSessionManager,
    /// `<name>.`, or empty without a replica name.
    prefix: String,
}

impl ReplicaSessions {
    /// Sessions of replica `name` (`None`: ids as rmcp makes them).
    pub fn new(inner: LocalSessionManager, name: Option<&str>) -> Self {
        Self {
            inner,
            prefix: name.map(|n| format!("{n}.")).unwrap_or_default(),
        }
    }

    /// How many sessions are open.
    pub async fn len(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    /// Whether none is open.
    pub async fn is_empty(&self) -> bool {
        self.len().await == 0
    }

    fn outer(&self, id: SessionId) -> SessionId {
        if self.prefix.is_empty() {
            id
        } else {
            Arc::from(format!("{}{id}", self.prefix))
        }
    }

    /// The inner id of a session id of this replica; another replica's id maps to an id no
    /// session has.
    fn inner_id(&self, id: &SessionId) -> SessionId {
        match id.strip_prefix(self.prefix.as_str()) {
            Some(rest) if !self.prefix.is_empty() => Arc::from(rest),
            Some(_) => id.clone(),
            None => Arc::from(format!("(another replica's) {id}")),
        }
    }
}

/// A stream of the inner manager as one that borrows nothing of the call (its opaque type names
/// the lifetime of the id it was asked with, though it is `'static`).
fn boxed(
    stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
) -> Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>> {
    Box::pin(stream)
}

impl SessionManager for ReplicaSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        Ok((self.outer(id), transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner
            .initialize_session(&self.inner_id(id), message)
            .await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(&self.inner_id(id)).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.inner.close_session(&self.inner_id(id)).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let id = self.inner_id(id);
        let stream = self.inner.create_stream(&id, message).await?;
        Ok(boxed(stream))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(&self.inner_id(id), message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let id = self.inner_id(id);
        let stream = self.inner.create_standalone_stream(&id).await?;
        Ok(boxed(stream))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let id = self.inner_id(id);
        let stream = self.inner.resume(&id, last_event_id).await?;
        Ok(boxed(stream))
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(self.inner_id(&id)).await
    }

    fn event_store(
        &self,
    ) -> Option<Arc<dyn rmcp::transport::streamable_http_server::session::EventStore>> {
        self.inner.event_store()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_the_replica_and_others_are_unknown() {
        let s = ReplicaSessions::new(LocalSessionManager::default(), Some("a"));
        let outer = s.outer(Arc::from("1234"));
        assert_eq!(&*outer, "a.1234");
        assert_eq!(&*s.inner_id(&outer), "1234");
        assert_ne!(&*s.inner_id(&Arc::from("b.1234")), "1234");
        let plain = ReplicaSessions::new(LocalSessionManager::default(), None);
        assert_eq!(&*plain.outer(Arc::from("1234")), "1234");
        assert_eq!(&*plain.inner_id(&Arc::from("1234")), "1234");
        assert!(replica_name_problem("gw-2").is_none());
        for bad in ["", "A", "a.b", "a b", &"x".repeat(64)] {
            assert!(replica_name_problem(bad).is_some(), "{bad}");
        }
    }
}
