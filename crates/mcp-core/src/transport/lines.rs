//! Newline-delimited JSON-RPC over any reader and writer, answering bad lines.
//!
//! rmcp's own line codec drops a line it cannot parse, so a client that sends invalid JSON
//! (or a number out of range, such as `1e400`) waits forever; and a line that is not UTF-8
//! ends its stream. This transport answers such a line itself, as JSON-RPC requires, and
//! reads on: `-32700` for a line that is not UTF-8, not JSON, or over the line limit, and
//! `-32600` for JSON that is not a JSON-RPC message (echoing its `id` when it has one).
//! Notifications that fail to parse are ignored, since they get no answer.
//!
//! Until a session is open (rmcp's handshake: `initialize`, or a first 2026-07-28 request
//! with its `_meta`), rmcp ends the connection on anything but a request. Notifications
//! and stray responses arriving then refer to nothing, so they are dropped here.
//!
//! At end of input, `receive` waits for the requests still in flight to be answered (at most
//! the drain grace) before reporting the end, so a client that closes stdin right after a
//! request still reads the answer.
//!
//! `receive` stays cancel-safe: everything it waits on is either the next frame or state
//! kept in `self`.

use std::{
    collections::HashSet,
    io,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use ferrymcp_types::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use futures::StreamExt as _;
use rmcp::{
    RoleServer,
    model::{
        ClientNotification, ClientRequest, GetMeta as _, JsonRpcMessage, ProtocolVersion, RequestId,
    },
    transport::Transport,
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt as _},
    time::Instant,
};
use tokio_util::codec::FramedRead;

use super::{
    frames::{Frame, LineFrames},
    request_id::echoable,
};

/// Where the handshake stands, as rmcp's serve loop sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    /// rmcp waits for `initialize` or a first request with complete 2026-07-28 `_meta`.
    Opening,
    /// rmcp's main loop runs: every message is its to handle.
    Open,
}

/// What is still owed to the client: answers to the requests forwarded (by id), and
/// answers being written.
#[derive(Default)]
struct InFlight {
    owed: Mutex<Owed>,
    changed: tokio::sync::Notify,
}

#[derive(Default)]
struct Owed {
    requests: HashSet<RequestId>,
    writes: usize,
}

impl InFlight {
    fn owed(&self) -> std::sync::MutexGuard<'_, Owed> {
        self.owed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `id` as owed an answer; `false` (recording nothing) when a request with the
    /// same id is still being answered.
    fn add(&self, id: &RequestId) -> bool {
        let mut owed = self.owed();
        if owed.requests.contains(id) {
            return false;
        }
        owed.requests.insert(id.clone());
        true
    }

    /// `id` was cancelled: no answer is owed.
    fn remove(&self, id: &RequestId) {
        let removed = self.owed().requests.remove(id);
        if removed {
            self.changed.notify_waiters();
        }
    }

    /// `id`'s answer is being written: the id is free again (as it is in rmcp's serve loop,
    /// which forgot it when it handed the answer over), and the write is still owed.
    fn answer(&self, id: &RequestId) {
        let mut owed = self.owed();
        owed.requests.remove(id);
        owed.writes += 1;
    }

    fn start_write(&self) {
        self.owed().writes += 1;
    }

    fn end_write(&self) {
        let mut owed = self.owed();
        owed.writes = owed.writes.saturating_sub(1);
        drop(owed);
        self.changed.notify_waiters();
    }

    fn is_empty(&self) -> bool {
        let owed = self.owed();
        owed.requests.is_empty() && owed.writes == 0
    }
}

/// How the input ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    Open,
    /// End of input (or a read error): draining until `deadline`.
    Ended {
        deadline: Instant,
    },
    /// The end was reported to rmcp.
    Reported,
}

pub(crate) struct LineTransport<R, W> {
    lines: FramedRead<R, LineFrames>,
    writer: Arc<tokio::sync::Mutex<W>>,
    max_line: usize,
    drain_grace: Duration,
    versions: Vec<ProtocolVersion>,
    lifecycle: Lifecycle,
    in_flight: Arc<InFlight>,
    input: Input,
    abandoned: tokio::sync::watch::Sender<bool>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LineTransport<R, W> {
    /// A transport reading lines of at most `max_line` bytes, giving in-flight requests
    /// `drain_grace` after end of input, for a service serving `versions`.
    pub(crate) fn new(
        read: R,
        write: W,
        max_line: usize,
        drain_grace: Duration,
        versions: Vec<ProtocolVersion>,
    ) -> Self {
        Self {
            lines: FramedRead::new(read, LineFrames::new(max_line)),
            writer: Arc::new(tokio::sync::Mutex::new(write)),
            max_line,
            drain_grace,
            versions,
            lifecycle: Lifecycle::Opening,
            in_flight: Arc::default(),
            input: Input::Open,
            abandoned: tokio::sync::watch::Sender::new(false),
        }
    }

    /// Becomes `true` when the drain grace ran out with requests still unanswered: their
    /// answers are abandoned, and the serve loop need not be waited for.
    pub(crate) fn abandoned(&self) -> tokio::sync::watch::Receiver<bool> {
        self.abandoned.subscribe()
    }
}

async fn write_line<W: AsyncWrite + Unpin>(
    writer: &tokio::sync::Mutex<W>,
    line: Vec<u8>,
) -> io::Result<()> {
    let mut writer = writer.lock().await;
    writer.write_all(&line).await?;
    writer.flush().await
}

/// An error response; `id` is left out when the request's is unknown, as the MCP schema
/// requires (it allows only a string or an integer).
fn error_line(id: Value, code: i32, message: String) -> Vec<u8> {
    let mut answer = json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}});
    if !id.is_null() {
        answer["id"] = id;
    }
    let mut line = answer.to_string().into_bytes();
    line.push(b'\n');
    line
}

fn parse_error(message: String) -> Vec<u8> {
    error_line(Value::Null, ferrymcp_types::codes::PARSE_ERROR, message)
}

/// The answer to a line that is not a valid client message, if it deserves one.
fn reject(line: &str, error: &serde_json::Error) -> Option<Vec<u8>> {
    match serde_json::from_str::<Value>(line) {
        Err(parse) => Some(parse_error(format!("Parse error: {parse}"))),
        Ok(value) => {
            let id = value.get("id").cloned();
            if id.is_none() && value.get("method").is_some() {
                tracing::debug!(%error, "ignoring a notification that does not parse");
                return None;
            }
            let id = id.filter(echoable).unwrap_or(Value::Null);
            Some(error_line(
                id,
                ferrymcp_types::codes::INVALID_REQUEST,
                format!("Invalid Request: {error}"),
            ))
        }
    }
}

/// Whether rmcp's handshake loop, given `request`, starts the session (mirrors
/// `rmcp::service::serve_server`): `initialize` does, and so does a request other than
/// `ping` and `server/discover` whose `_meta` names a supported 2026-07-28 version with
/// every required key. Anything else is answered there and the loop goes on waiting.
fn opens_session(request: &ClientRequest, versions: &[ProtocolVersion]) -> bool {
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        request => {
            let meta = request.get_meta();
            meta.missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty()
                && meta
                    .protocol_version()
                    .is_some_and(|version| versions.contains(&version))
        }
    }
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// What to do with a message that parsed: `Some` to hand it to rmcp, `Err` to answer it
    /// here.
    fn admit(
        &mut self,
        message: ClientJsonRpcMessage,
    ) -> Result<Option<ClientJsonRpcMessage>, Vec<u8>> {
        match &message {
            JsonRpcMessage::Request(request) => {
                if self.lifecycle == Lifecycle::Opening
                    && opens_session(&request.request, &self.versions)
                {
                    self.lifecycle = Lifecycle::Open;
                }
                if !self.in_flight.add(&request.id) {
                    // rmcp's serve loop keys its requests by id: a second one in flight
                    // under the same id would take the first one's place, and one of the
                    // two answers would be dropped.
                    return Err(error_line(
                        serde_json::to_value(&request.id).unwrap_or_default(),
                        ferrymcp_types::codes::INVALID_REQUEST,
                        format!(
                            "Invalid Request: the id {} is already in use by a request that \
                             has not been answered",
                            request.id
                        ),
                    ));
                }
            }
            JsonRpcMessage::Notification(_)
            | JsonRpcMessage::Response(_)
            | JsonRpcMessage::Error(_)
                if self.lifecycle == Lifecycle::Opening =>
            {
                tracing::debug!(
                    "ignoring a message that is not a request before the session opened"
                );
                return Ok(None);
            }
            JsonRpcMessage::Notification(notification) => {
                // A cancelled request gets no answer: it is no longer in flight.
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.in_flight.remove(id);
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
        Ok(Some(message))
    }

    /// After end of input: waits until no request is in flight or the grace runs out.
    async fn drain(&mut self, deadline: Instant) {
        loop {
            let changed = self.in_flight.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.in_flight.is_empty() {
                return;
            }
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep_until(deadline) => {
                    tracing::warn!(
                        grace = ?self.drain_grace,
                        "input ended; requests still running after the drain grace are abandoned"
                    );
                    self.abandoned.send_replace(true);
                    return;
                }
            }
        }
    }

    /// The next frame's meaning: a message for rmcp, an answer to write, or nothing.
    fn interpret(&mut self, frame: Frame) -> Result<Option<ClientJsonRpcMessage>, Vec<u8>> {
        let bytes = match frame {
            Frame::TooLong => {
                return Err(parse_error(format!(
                    "Parse error: the line exceeds {} bytes",
                    self.max_line
                )));
            }
            Frame::Line(bytes) => bytes,
        };
        let Ok(line) = std::str::from_utf8(&bytes) else {
            return Err(parse_error(
                "Parse error: the line is not valid UTF-8".to_owned(),
            ));
        };
        let line = line.trim_start_matches('\u{feff}').trim_end_matches('\r');
        if line.trim().is_empty() {
            return Ok(None);
        }
        let rerouted = crate::subscription::rerouted(line.as_bytes());
        let line = rerouted
            .as_deref()
            .and_then(|text| std::str::from_utf8(text).ok())
            .unwrap_or(line);
        match serde_json::from_str::<ClientJsonRpcMessage>(line) {
            Ok(message) => self.admit(message),
            Err(error) => match reject(line, &error) {
                Some(answer) => Err(answer),
                None => Ok(None),
            },
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = Arc::clone(&self.writer);
        let in_flight = Arc::clone(&self.in_flight);
        let answered = match &item {
            JsonRpcMessage::Response(response) => Some(response.id.clone()),
            JsonRpcMessage::Error(error) => error.id.clone(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        if let Some(id) = &answered {
            in_flight.answer(id);
        }
        async move {
            let outcome = match serde_json::to_vec(&item) {
                Ok(mut line) => {
                    line.push(b'\n');
                    write_line(&writer, line).await
                }
                Err(error) => Err(io::Error::other(error)),
            };
            // Delivered once written (or once writing failed: it never will be).
            if answered.is_some() {
                in_flight.end_write();
            }
            outcome
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            match self.input {
                Input::Reported => return None,
                Input::Ended { deadline } => {
                    self.drain(deadline).await;
                    self.input = Input::Reported;
                    return None;
                }
                Input::Open => {}
            }
            let frame = match self.lines.next().await {
                Some(Ok(frame)) => frame,
                end => {
                    if let Some(Err(error)) = end {
                        tracing::debug!(%error, "stdio read failed");
                    }
                    self.input = Input::Ended {
                        deadline: Instant::now() + self.drain_grace,
                    };
                    continue;
                }
            };
            match self.interpret(frame) {
                Ok(Some(message)) => return Some(message),
                Ok(None) => {}
                Err(answer) => {
                    // rmcp's serve loop may drop this future at any await (it selects over
                    // `receive`), so the answer is written by its own task: a line consumed
                    // here is always answered.
                    let writer = Arc::clone(&self.writer);
                    let in_flight = Arc::clone(&self.in_flight);
                    in_flight.start_write();
                    tokio::spawn(async move {
                        if let Err(error) = write_line(&writer, answer).await {
                            tracing::debug!(%error, "could not answer a malformed message");
                        }
                        in_flight.end_write();
                    });
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.shutdown().await
    }
}
