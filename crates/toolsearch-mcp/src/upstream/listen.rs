//! Change notifications on protocol 2026-07-28, which reach a client only through a
//! `subscriptions/listen` subscription.

use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient};
use tokio::sync::mpsc;

use super::UpstreamEvent;

/// From protocol 2026-07-28 on, a server's change notifications reach a client only through a
/// `subscriptions/listen` subscription (a stateless HTTP server has no other stream to send them
/// on). When the upstream speaks that protocol and says its tool list can change, this opens a
/// subscription for `tools/list_changed` (and the resource and prompt list changes it announces)
/// and forwards each notification as an event; the task ends with the connection. Older
/// protocols deliver the notifications to [`UpstreamClient`](super::UpstreamClient)'s handlers
/// instead.
pub(super) fn listen_for_changes(
    peer: &Peer<RoleClient>,
    name: &str,
    events: &mpsc::UnboundedSender<UpstreamEvent>,
) {
    let Some(info) = peer.peer_info() else {
        return;
    };
    let caps = &info.capabilities;
    let tools = caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true);
    let resources = caps.resources.as_ref().and_then(|t| t.list_changed) == Some(true);
    let prompts = caps.prompts.as_ref().and_then(|t| t.list_changed) == Some(true);
    if info.protocol_version.has_initialize() || !(tools || resources || prompts) {
        return;
    }
    let mut builder = SubscriptionFilter::builder();
    if tools {
        builder = builder.tools_list_changed();
    }
    if resources {
        builder = builder.resources_list_changed();
    }
    if prompts {
        builder = builder.prompts_list_changed();
    }
    let filter = builder.build();
    let (peer, name, events) = (peer.clone(), name.to_owned(), events.clone());
    tokio::spawn(async move {
        let mut subscription = match peer.listen(filter).await {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(upstream = %name, error = %e, "no tools/list_changed subscription");
                return;
            }
        };
        loop {
            match subscription.next().await {
                Ok(Some(notification)) => {
                    let event = match notification {
                        ServerNotification::ToolListChangedNotification(_) => {
                            UpstreamEvent::ToolsChanged(name.clone())
                        }
                        ServerNotification::ResourceListChangedNotification(_) => {
                            UpstreamEvent::ResourcesChanged(name.clone())
                        }
                        ServerNotification::PromptListChangedNotification(_) => {
                            UpstreamEvent::PromptsChanged(name.clone())
                        }
                        _ => continue,
                    };
                    if events.send(event).is_err() {
                        return;
                    }
                }
                Ok(None) => return,
                Err(e) => {
                    tracing::debug!(upstream = %name, error = %e, "subscription ended");
                    return;
                }
            }
        }
    });
}
