//! Resumable answers on 2025-11-25 sessions (SEP-1699). Every request of a session is
//! answered on its own SSE stream; a handler may end that stream early
//! ([`Context::close_sse_stream`](crate::Context::close_sse_stream)) while it goes on
//! working, and the client reconnects with `Last-Event-ID` to get everything sent since,
//! the answer included, whether it comes before or after the reconnect.
//!
//! This session manager is rmcp's [`LocalSessionManager`] plus that: the stream it hands to
//! the HTTP response reads the request's channel while attached; closing it ends the HTTP
//! body (after a priming event with the reconnection delay) and parks the channel, whose
//! events a relay keeps (at most [`PARKED_EVENTS`] per stream, for at most
//! [`PARKED_STREAMS`] streams, each until [`PARKED_TTL`] after its answer) for the
//! reconnect to replay and follow.
//!
//! It also refuses (`-32600`, on the request's own stream) a request whose id a request of
//! the same session still being answered holds: rmcp routes answers by id, so the second
//! would take the first one's place and one of the two answers would be lost.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    pin::Pin,
    sync::{Arc, Mutex, MutexGuard, PoisonError, Weak},
    task::{Context as TaskContext, Poll, Waker},
    time::Duration,
};

use futures::Stream;
use rmcp::{
    model::{
        ClientJsonRpcMessage, ErrorData, GetExtensions as _, JsonRpcMessage, RequestId,
        ServerJsonRpcMessage,
    },
    transport::{
        WorkerTransport,
        common::server_side_http::{ServerSseMessage, SessionId},
        streamable_http_server::session::{
            RestoreOutcome, SessionManager,
            local::{
                LocalSessionHandle, LocalSessionManager, LocalSessionManagerError,
                LocalSessionWorker,
            },
            store::EventStore,
        },
    },
};
use tokio::sync::{mpsc, watch};

/// The most closed streams kept for a reconnect, across sessions; past it a handler's
/// close is refused and its stream stays open.
pub(crate) const PARKED_STREAMS: usize = 256;
/// The most events kept per closed stream (the oldest go first; the answer is the last).
pub(crate) const PARKED_EVENTS: usize = 256;
/// How long a closed stream's events are kept once its answer came.
pub(crate) const PARKED_TTL: Duration = Duration::from_secs(60);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The index in an event id `index/stream` (rmcp's request-stream ids).
fn event_index(id: Option<&str>) -> Option<usize> {
    id?.split('/').next()?.parse().ok()
}

type Key = (SessionId, u64);
type Parking = Mutex<HashMap<Key, Arc<Parked>>>;
/// The ids of each session's requests still being answered.
type Pending = Mutex<HashMap<SessionId, HashSet<RequestId>>>;

/// A request's hold on its id while its answer may still come.
struct Claim {
    pending: Weak<Pending>,
    session: SessionId,
    id: RequestId,
}

impl Claim {
    /// Holds `id` for `session`; `None` when a request of the session already holds it.
    fn take(pending: &Arc<Pending>, session: &SessionId, id: &RequestId) -> Option<Self> {
        let fresh = lock(pending)
            .entry(session.clone())
            .or_default()
            .insert(id.clone());
        fresh.then(|| Self {
            pending: Arc::downgrade(pending),
            session: session.clone(),
            id: id.clone(),
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let Some(pending) = self.pending.upgrade() else {
            return;
        };
        let mut pending = lock(&pending);
        if let Some(ids) = pending.get_mut(&self.session) {
            ids.remove(&self.id);
            if ids.is_empty() {
                pending.remove(&self.session);
            }
        }
    }
}

/// A request's channel, with its claim on the id: dropped when the answer is through.
struct Events {
    receiver: mpsc::Receiver<ServerSseMessage>,
    _claim: Option<Claim>,
}

/// One request's channel while the HTTP response reads it.
struct Line {
    state: Mutex<LineState>,
}

struct LineState {
    events: Option<Events>,
    /// Set by a close: the last event the response sends, then it ends.
    closing: Option<Option<ServerSseMessage>>,
    waker: Option<Waker>,
    /// The index of the last event the response sent.
    last: usize,
}

/// The response body's stream.
struct Attached(Arc<Line>);

impl Stream for Attached {
    type Item = ServerSseMessage;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let mut state = lock(&self.0.state);
        if let Some(last) = state.closing.as_mut() {
            return Poll::Ready(last.take());
        }
        state.waker = Some(cx.waker().clone());
        let polled = match state.events.as_mut() {
            Some(events) => events.receiver.poll_recv(cx),
            None => Poll::Ready(None),
        };
        if let Poll::Ready(None) = polled {
            // Answered: the id is free again.
            state.events = None;
        }
        if let Poll::Ready(Some(event)) = &polled
            && let Some(index) = event_index(event.event_id.as_deref())
        {
            state.last = index;
        }
        polled
    }
}

/// A closed stream's events, for reconnects.
struct Parked {
    events: Mutex<ParkedEvents>,
    changed: watch::Sender<u64>,
}

#[derive(Default)]
struct ParkedEvents {
    kept: VecDeque<(usize, ServerSseMessage)>,
    done: bool,
}

impl Parked {
    /// The first kept event after `index`, or whether the stream is over.
    fn after(&self, index: usize) -> Result<(usize, ServerSseMessage), bool> {
        let events = lock(&self.events);
        events
            .kept
            .iter()
            .find(|(i, _)| *i > index)
            .cloned()
            .ok_or(events.done)
    }

    /// Everything after `index`, then what comes, until the answer.
    fn follow(self: Arc<Self>, index: usize) -> impl Stream<Item = ServerSseMessage> + Send + Sync {
        let changes = self.changed.subscribe();
        futures::stream::unfold(
            (self, changes, index),
            |(parked, mut changes, index)| async move {
                loop {
                    changes.borrow_and_update();
                    match parked.after(index) {
                        Ok((next, event)) => return Some((event, (parked, changes, next))),
                        Err(true) => return None,
                        Err(false) => {
                            if changes.changed().await.is_err() {
                                return None;
                            }
                        }
                    }
                }
            },
        )
    }
}

/// Ends the SSE stream one request's answer travels on (see
/// [`Context::close_sse_stream`](crate::Context::close_sse_stream)).
#[derive(Clone)]
pub(crate) struct StreamCloser {
    line: Arc<Line>,
    key: Key,
    parking: Weak<Parking>,
    retry: Duration,
}

impl StreamCloser {
    /// Ends the response (a last priming event tells the client when to reconnect) and
    /// parks the request's channel; `false` when it was already closed or too many are.
    pub(crate) async fn close(&self) -> bool {
        let Some(parking) = self.parking.upgrade() else {
            return false;
        };
        let parked = {
            let mut parked = lock(&parking);
            if parked.len() >= PARKED_STREAMS {
                tracing::warn!(
                    limit = PARKED_STREAMS,
                    "too many closed SSE streams kept; this one stays open"
                );
                return false;
            }
            let mut state = lock(&self.line.state);
            let Some(events) = state.events.take() else {
                return false;
            };
            let priming =
                ServerSseMessage::priming(format!("{}/{}", state.last, self.key.1), self.retry);
            state.closing = Some(Some(priming));
            if let Some(waker) = state.waker.take() {
                waker.wake();
            }
            let entry = Arc::new(Parked {
                events: Mutex::default(),
                changed: watch::channel(0).0,
            });
            parked.insert(self.key.clone(), Arc::clone(&entry));
            (entry, events)
        };
        tokio::spawn(relay(
            parked.1,
            parked.0,
            self.key.clone(),
            Arc::downgrade(&parking),
        ));
        true
    }
}

/// Keeps a closed stream's events until its answer, and a while after.
async fn relay(mut events: Events, parked: Arc<Parked>, key: Key, parking: Weak<Parking>) {
    while let Some(event) = events.receiver.recv().await {
        let Some(index) = event_index(event.event_id.as_deref()) else {
            continue;
        };
        {
            let mut kept = lock(&parked.events);
            if kept.kept.len() >= PARKED_EVENTS {
                kept.kept.pop_front();
            }
            kept.kept.push_back((index, event));
        }
        parked.changed.send_modify(|n| *n += 1);
    }
    drop(events);
    lock(&parked.events).done = true;
    parked.changed.send_modify(|n| *n += 1);
    tokio::time::sleep(PARKED_TTL).await;
    if let Some(parking) = parking.upgrade() {
        lock(&parking).remove(&key);
    }
}

impl std::fmt::Debug for StreamCloser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamCloser")
            .field("stream", &self.key.1)
            .finish_non_exhaustive()
    }
}

/// The answer to a request whose id another request of its session holds.
fn in_use(id: RequestId) -> ServerSseMessage {
    let error = ErrorData::invalid_request(
        format!(
            "Invalid Request: the id {id} is already in use by a request of this session \
             that has not been answered"
        ),
        None,
    );
    ServerSseMessage::from_message(ServerJsonRpcMessage::error(error, Some(id)))
}

/// rmcp's local sessions, whose requests carry a [`StreamCloser`] and hold their ids.
pub(super) struct Sessions {
    inner: Arc<LocalSessionManager>,
    /// The reconnection delay a closed stream announces.
    retry: Duration,
    parking: Arc<Parking>,
    pending: Arc<Pending>,
}

impl Sessions {
    /// rmcp's sessions, with streams handlers may close.
    pub(super) fn new(inner: Arc<LocalSessionManager>, retry: Duration) -> Self {
        Self {
            inner,
            retry,
            parking: Arc::default(),
            pending: Arc::default(),
        }
    }

    async fn handle(&self, id: &SessionId) -> Result<LocalSessionHandle, LocalSessionManagerError> {
        self.inner
            .sessions
            .read()
            .await
            .get(id)
            .cloned()
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        lock(&self.parking).retain(|(session, _), _| session != id);
        lock(&self.pending).remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let claim = match &message {
            JsonRpcMessage::Request(request) => match Claim::take(&self.pending, id, &request.id) {
                Some(claim) => Some(claim),
                None => {
                    return Ok(futures::future::Either::Right(futures::stream::once(
                        std::future::ready(in_use(request.id.clone())),
                    )));
                }
            },
            _ => None,
        };
        let session = self.handle(id).await?;
        let receiver = session.establish_request_wise_channel().await?;
        let line = Arc::new(Line {
            state: Mutex::new(LineState {
                events: Some(Events {
                    receiver: receiver.inner,
                    _claim: claim,
                }),
                closing: None,
                waker: None,
                last: 0,
            }),
        });
        if let (JsonRpcMessage::Request(request), Some(stream)) =
            (&mut message, receiver.http_request_id)
        {
            request.request.extensions_mut().insert(StreamCloser {
                line: Arc::clone(&line),
                key: (id.clone(), stream),
                parking: Arc::downgrade(&self.parking),
                retry: self.retry,
            });
        }
        session
            .push_message(message, receiver.http_request_id)
            .await?;
        Ok(futures::future::Either::Left(Attached(line)))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let parked = last_event_id.split_once('/').and_then(|(index, stream)| {
            let key = (id.clone(), stream.parse().ok()?);
            let parked = lock(&self.parking).get(&key).cloned()?;
            Some((parked, index.parse().ok()?))
        });
        Ok(match parked {
            Some((parked, index)) => futures::future::Either::Left(parked.follow(index)),
            None => futures::future::Either::Right(self.inner.resume(id, last_event_id).await?),
        })
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}
