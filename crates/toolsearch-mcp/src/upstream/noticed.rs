//! An upstream connection's transport, noting each progress and log notification as it is read,
//! before rmcp's loop hands it to [`UpstreamClient`](super::UpstreamClient) on a task of its own:
//! a call whose answer is read after them then waits for them to reach its client
//! ([`Inflight::notices_settled`]) instead of overtaking them.

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{ServerJsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use super::inflight::Inflight;

/// A transport whose progress and log notifications are counted in its connection's [`Inflight`].
pub(super) struct Noticed<T> {
    inner: T,
    inflight: Arc<Inflight>,
}

impl<T> Noticed<T> {
    pub(super) fn new(inner: T, inflight: Arc<Inflight>) -> Self {
        Self { inner, inflight }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Noticed<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        if let ServerJsonRpcMessage::Notification(n) = &message
            && matches!(
                n.notification,
                ServerNotification::ProgressNotification(_)
                    | ServerNotification::LoggingMessageNotification(_)
            )
        {
            self.inflight.notice_arrives();
        }
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}
