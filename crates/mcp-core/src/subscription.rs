//! `subscriptions/listen` (2026-07-28): one long-lived request on which the server pushes
//! the notifications a client asked for.
//!
//! The server serves the filter members of the base protocol itself (list changes and
//! resource updates). An [`Extension`](crate::Extension) may serve more members through
//! [`Extension::subscribe`](crate::Extension::subscribe): the tasks extension serves
//! `taskIds` and pushes `notifications/tasks`. It returns a [`Subscription`]: what it
//! accepted (listed in the acknowledgment) and the stream of notifications to push until
//! the listen ends.
//!
//! ```
//! use futures::StreamExt as _;
//! use ferrymcp_core::subscription::{PushedNotification, Subscription};
//!
//! // Accepts `{"ticks": true}` and pushes one notification.
//! let mut acknowledged = ferrymcp_core::types::JsonObject::new();
//! acknowledged.insert("ticks".into(), true.into());
//! let subscription = Subscription::new(
//!     acknowledged,
//!     futures::stream::iter([PushedNotification::new("notifications/tick", Default::default())]).boxed(),
//! );
//! assert!(subscription.acknowledged().contains_key("ticks"));
//! ```

use std::{collections::HashSet, sync::Arc};

use ferrymcp_types::{
    CustomNotification, ErrorCode, ErrorData, JsonObject, ServerNotification, SubscriptionFilter,
};
use futures::{StreamExt as _, stream::BoxStream};
use rmcp::{
    RoleServer,
    model::{GetMeta as _, RequestId},
    service::Peer,
};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::{Context, ListKind, Server};

/// What an extension accepted of a `subscriptions/listen` filter, and what it pushes.
///
/// ```
/// use futures::StreamExt as _;
/// let s = ferrymcp_core::subscription::Subscription::new(Default::default(), futures::stream::empty().boxed());
/// assert!(s.acknowledged().is_empty());
/// ```
pub struct Subscription {
    acknowledged: JsonObject,
    notifications: BoxStream<'static, PushedNotification>,
}

impl Subscription {
    /// `acknowledged` is merged into the acknowledgment's `notifications` (e.g. the
    /// `taskIds` accepted); `notifications` is pushed on the listen until it ends.
    ///
    /// ```
    /// use futures::StreamExt as _;
    /// let _ = ferrymcp_core::subscription::Subscription::new(Default::default(), futures::stream::empty().boxed());
    /// ```
    pub fn new(
        acknowledged: JsonObject,
        notifications: BoxStream<'static, PushedNotification>,
    ) -> Self {
        Self {
            acknowledged,
            notifications,
        }
    }

    /// The filter members acknowledged.
    ///
    /// ```
    /// use futures::StreamExt as _;
    /// let s = ferrymcp_core::subscription::Subscription::new(Default::default(), futures::stream::empty().boxed());
    /// assert!(s.acknowledged().is_empty());
    /// ```
    pub fn acknowledged(&self) -> &JsonObject {
        &self.acknowledged
    }

    /// The members acknowledged and the notifications (to combine subscriptions, as a
    /// proxy does with its local extension's).
    ///
    /// ```
    /// use futures::StreamExt as _;
    /// let s = ferrymcp_core::subscription::Subscription::new(Default::default(), futures::stream::empty().boxed());
    /// let (members, _notifications) = s.into_parts();
    /// assert!(members.is_empty());
    /// ```
    pub fn into_parts(self) -> (JsonObject, BoxStream<'static, PushedNotification>) {
        (self.acknowledged, self.notifications)
    }
}

/// One notification to push on a listen: its method and params (the server adds the
/// subscription id under `_meta`).
///
/// ```
/// let n = ferrymcp_core::subscription::PushedNotification::new("notifications/tasks", Default::default());
/// assert_eq!(n.method(), "notifications/tasks");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PushedNotification {
    method: String,
    params: JsonObject,
}

impl PushedNotification {
    /// A notification `method` with `params`.
    ///
    /// ```
    /// let _ = ferrymcp_core::subscription::PushedNotification::new("notifications/tasks", Default::default());
    /// ```
    pub fn new(method: impl Into<String>, params: JsonObject) -> Self {
        Self {
            method: method.into(),
            params,
        }
    }

    /// The method.
    ///
    /// ```
    /// let n = ferrymcp_core::subscription::PushedNotification::new("m", Default::default());
    /// assert_eq!(n.method(), "m");
    /// ```
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The params.
    ///
    /// ```
    /// let n = ferrymcp_core::subscription::PushedNotification::new("m", Default::default());
    /// assert!(n.params().is_empty());
    /// ```
    pub fn params(&self) -> &JsonObject {
        &self.params
    }
}

/// The method a `subscriptions/listen` is renamed to by the transports when its filter has
/// members rmcp's parser would drop (rmcp models only the base protocol's four): the service
/// then serves the whole request itself.
pub(crate) const EXTENDED_LISTEN: &str = "ferrymcp/subscriptions/listen";

const LISTEN: &str = "subscriptions/listen";

/// The filter members of the base protocol.
const BASE_MEMBERS: [&str; 4] = [
    "toolsListChanged",
    "promptsListChanged",
    "resourcesListChanged",
    "resourceSubscriptions",
];

/// Renames `message` to [`EXTENDED_LISTEN`] when it is a `subscriptions/listen` whose filter
/// has members beyond the base protocol's; returns whether it did.
pub(crate) fn reroute(message: &mut Value) -> bool {
    let Some(object) = message.as_object_mut() else {
        return false;
    };
    if object.get("method").and_then(Value::as_str) != Some(LISTEN) {
        return false;
    }
    let extended = object
        .get("params")
        .and_then(|params| params.get("notifications"))
        .and_then(Value::as_object)
        .is_some_and(|filter| filter.keys().any(|k| !BASE_MEMBERS.contains(&k.as_str())));
    if extended {
        object.insert("method".into(), EXTENDED_LISTEN.into());
    }
    extended
}

/// `text` renamed as [`reroute`] does, when it is a `subscriptions/listen` to reroute (a
/// raw message that does not name the method is not parsed).
pub(crate) fn rerouted(text: &[u8]) -> Option<Vec<u8>> {
    if !text.windows(LISTEN.len()).any(|w| w == LISTEN.as_bytes()) {
        return None;
    }
    let mut message = serde_json::from_slice::<Value>(text).ok()?;
    if !reroute(&mut message) {
        return None;
    }
    serde_json::to_vec(&message).ok()
}

/// The `params.notifications` object of an extended listen.
pub(crate) fn requested_filter(params: Option<&Value>) -> Result<JsonObject, ErrorData> {
    match params.and_then(|p| p.get("notifications")) {
        Some(Value::Object(filter)) => Ok(filter.clone()),
        _ => Err(ErrorData::invalid_params(
            "subscriptions/listen needs params.notifications, an object",
            None,
        )),
    }
}

/// `subscriptions/listen` is not a 2025-11-25 method.
pub(crate) fn not_on_legacy() -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        "subscriptions/listen is not a 2025-11-25 method",
        None,
    )
}

/// Sends notifications on one listen: each carries the listen's request id as its
/// subscription id, and goes out through the listen's own peer (its stream).
pub(crate) struct Outlet {
    peer: Peer<RoleServer>,
    id: RequestId,
}

/// The listen's stream is gone.
pub(crate) struct Closed;

impl Outlet {
    pub(crate) fn new(peer: Peer<RoleServer>, id: RequestId) -> Self {
        Self { peer, id }
    }

    async fn send(&self, mut notification: ServerNotification) -> Result<(), Closed> {
        notification
            .get_meta_mut()
            .set_subscription_id(self.id.clone());
        self.peer
            .send_notification(notification)
            .await
            .map_err(|error| {
                tracing::debug!(%error, "subscription closed");
                Closed
            })
    }

    pub(crate) async fn push(&self, method: &str, params: JsonObject) -> Result<(), Closed> {
        let notification = CustomNotification::new(method.to_owned(), Some(Value::Object(params)));
        self.send(ServerNotification::CustomNotification(notification))
            .await
    }

    async fn list_changed(&self, kind: ListKind) -> Result<(), Closed> {
        let notification = match kind {
            ListKind::Tools => ServerNotification::ToolListChangedNotification(Default::default()),
            ListKind::Resources => {
                ServerNotification::ResourceListChangedNotification(Default::default())
            }
            ListKind::Prompts => {
                ServerNotification::PromptListChangedNotification(Default::default())
            }
        };
        self.send(notification).await
    }

    async fn resource_updated(&self, uri: String) -> Result<(), Closed> {
        let params = ferrymcp_types::ResourceUpdatedNotificationParam::new(uri);
        self.send(ServerNotification::ResourceUpdatedNotification(
            ferrymcp_types::ResourceUpdatedNotification::new(params),
        ))
        .await
    }
}

/// The receivers a listen reads, opened before it is acknowledged so that a change made
/// right after the acknowledgment is seen.
pub(crate) struct Receivers {
    pub(crate) changes: broadcast::Receiver<ListKind>,
    pub(crate) updates: broadcast::Receiver<Arc<str>>,
}

impl Receivers {
    pub(crate) fn open(root: &Server) -> Self {
        Self {
            changes: root.list_changes(),
            updates: root.resource_updates(),
        }
    }
}

/// Pushes what `accepted` asks for, and every extension's notifications, until `ended`
/// fires or the stream closes.
pub(crate) async fn run(
    cx: &Context,
    accepted: &SubscriptionFilter,
    receivers: Receivers,
    outlet: Outlet,
    extensions: Vec<BoxStream<'static, PushedNotification>>,
    ended: CancellationToken,
) {
    let Receivers {
        mut changes,
        mut updates,
    } = receivers;
    let root = cx.server();
    let watched: HashSet<String> = accepted
        .resource_subscriptions
        .iter()
        .flatten()
        .filter(|uri| root.check_watchable(cx, uri).is_ok())
        .cloned()
        .collect();
    let wants = |kind: ListKind| {
        let flag = match kind {
            ListKind::Tools => accepted.tools_list_changed,
            ListKind::Resources => accepted.resources_list_changed,
            ListKind::Prompts => accepted.prompts_list_changed,
        };
        flag == Some(true)
    };
    let has_extensions = !extensions.is_empty();
    let mut pushed = futures::stream::select_all(extensions);
    loop {
        tokio::select! {
            () = ended.cancelled() => return,
            change = changes.recv() => {
                let kinds = match change {
                    Ok(kind) => vec![kind],
                    Err(broadcast::error::RecvError::Lagged(_)) => ListKind::ALL.to_vec(),
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                for kind in kinds.into_iter().filter(|k| wants(*k)) {
                    if outlet.list_changed(kind).await.is_err() {
                        return;
                    }
                }
            }
            update = updates.recv(), if !watched.is_empty() => {
                let uris: Vec<String> = match update {
                    Ok(uri) if watched.contains(&*uri) => vec![uri.to_string()],
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Lagged(_)) => watched.iter().cloned().collect(),
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                for uri in uris {
                    if outlet.resource_updated(uri).await.is_err() {
                        return;
                    }
                }
            }
            Some(notification) = pushed.next(), if has_extensions => {
                let PushedNotification { method, params } = notification;
                if outlet.push(&method, params).await.is_err() {
                    return;
                }
            }
        }
    }
}
