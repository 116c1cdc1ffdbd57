//! Accepting and serving connections with hyper: the connection limit, the in-flight request
//! limit, and the header and idle timeouts of each connection.

use std::{
    convert::Infallible,
    io,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::{Router, body::Body, response::Response};
use hyper_util::rt::TokioIo;
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
    sync::{OwnedSemaphorePermit, Semaphore},
    time::Instant,
};
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use tower::ServiceExt as _;

use super::{
    reject_log::{Kind, RejectLog},
    reply,
};

/// The connection-level limits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) max_connections: usize,
    pub(super) max_in_flight: usize,
    pub(super) header_timeout: Duration,
    pub(super) idle_timeout: Duration,
}

/// Accepts connections until `shutdown`, then lets open ones finish their requests.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: CancellationToken,
    log: Arc<RejectLog>,
) {
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let in_flight = Arc::new(Semaphore::new(limits.max_in_flight));
    // Read at each scrape: what the limits' semaphores hold out.
    let _gauges = {
        let (connections, in_flight) = (Arc::downgrade(&connections), Arc::downgrade(&in_flight));
        crate::metrics::on_scrape(move || {
            let held = |semaphore: &std::sync::Weak<Semaphore>, max: usize| {
                semaphore
                    .upgrade()
                    .map_or(0.0, |s| max.saturating_sub(s.available_permits()) as f64)
            };
            let readings = vec![
                crate::metrics::Reading::new(
                    "mcp_http_connections",
                    held(&connections, limits.max_connections),
                ),
                crate::metrics::Reading::new(
                    "mcp_http_requests_in_flight",
                    held(&in_flight, limits.max_in_flight),
                ),
            ];
            Box::pin(std::future::ready(readings))
        })
    };
    let tracker = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(error) => {
                accept_failed(error).await;
                continue;
            }
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            log.refused(
                Kind::Connections,
                &format_args!(
                    "a connection over max_connections ({})",
                    limits.max_connections
                ),
            );
            // The socket is new and its send buffer empty: the short answer fits without
            // waiting, and a client that reads nothing cannot hold the accept loop.
            let _ = tcp.try_write(&reply::over_connection_limit(limits.max_connections));
            continue;
        };
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        tracker.spawn(connection(
            tcp,
            app.clone(),
            limits,
            in_flight.clone(),
            permit,
            shutdown.clone(),
            log.clone(),
        ));
    }
    tracker.close();
    tracker.wait().await;
}

/// Errors of `accept` that concern one connection are skipped; others (out of file
/// descriptors) are waited out briefly instead of spinning.
async fn accept_failed(error: io::Error) {
    use io::ErrorKind::*;
    if matches!(
        error.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset | Interrupted
    ) {
        return;
    }
    tracing::error!(%error, "accepting a connection failed");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

async fn connection(
    tcp: TcpStream,
    app: Router,
    limits: Limits,
    in_flight: Arc<Semaphore>,
    _permit: OwnedSemaphorePermit,
    shutdown: CancellationToken,
    log: Arc<RejectLog>,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: tcp,
        activity: activity.clone(),
    });
    let service = {
        let activity = activity.clone();
        let log = log.clone();
        hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
            let busy = activity.begin();
            let app = app.clone();
            let in_flight = in_flight.clone();
            let log = log.clone();
            async move {
                let mut request = request;
                let permit = if request.method() == http::Method::POST {
                    match in_flight.try_acquire_owned() {
                        Ok(permit) => {
                            let slot = InFlightSlot {
                                _permit: Arc::new(permit),
                            };
                            request.extensions_mut().insert(slot.clone());
                            Some(slot)
                        }
                        Err(_) => {
                            log.refused(
                                Kind::InFlight,
                                &format_args!(
                                    "a request over max_in_flight ({})",
                                    limits.max_in_flight
                                ),
                            );
                            return Ok::<_, Infallible>(reply::busy(format!(
                                "the server is answering its limit of {} requests; retry later",
                                limits.max_in_flight
                            )));
                        }
                    }
                } else {
                    None
                };
                let response: Response = match app.oneshot(request.map(Body::new)).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                // The request counts as in progress until its body is sent or dropped.
                let held = (busy, permit);
                Ok(response.map(|body| Body::new(Holding { body, _held: held })))
            }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    // Hyper's own header timer cannot tell an idle keep-alive connection from slow headers
    // and is re-armed on every request; the watchdog below enforces both timeouts instead.
    builder.header_read_timeout(None).keep_alive(true);
    let serving = builder.serve_connection(io, service);
    tokio::pin!(serving);
    let mut draining = false;
    loop {
        tokio::select! {
            outcome = serving.as_mut() => {
                if let Err(error) = outcome {
                    tracing::debug!(%error, "HTTP connection ended with an error");
                }
                return;
            }
            () = shutdown.cancelled(), if !draining => {
                draining = true;
                serving.as_mut().graceful_shutdown();
            }
            expired = activity.expired(limits) => {
                match expired {
                    Expired::Header => log.refused(
                        Kind::HeaderTimeout,
                        &format_args!("a request whose headers took over {:?}", limits.header_timeout),
                    ),
                    Expired::Idle => tracing::debug!("closing an idle HTTP connection"),
                }
                return;
            }
        }
    }
}

/// A POST's share of `max_in_flight`, in the request's extensions: the request's own path
/// takes it out (see `endpoint::guard`) so that a call still running after its client hung
/// up keeps counting against the limit until it ends.
#[derive(Clone)]
pub(super) struct InFlightSlot {
    _permit: Arc<OwnedSemaphorePermit>,
}

enum Expired {
    Header,
    Idle,
}

/// What a connection is doing, kept in atomics so that a request costs a few stores and no
/// wake-up: the watchdog reads them only when its timer fires, and re-arms the timer for
/// the deadline they give.
struct Activity {
    start: Instant,
    /// Requests in progress.
    busy: AtomicUsize,
    /// Bytes of a new request arrived while no request was in progress.
    receiving: AtomicBool,
    /// When the connection last became idle or started receiving, in ms after `start`.
    since_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            busy: AtomicUsize::new(0),
            receiving: AtomicBool::new(false),
            since_ms: AtomicU64::new(0),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Bytes arrived: an idle connection starts receiving a request.
    fn received(&self) {
        if self.busy.load(Ordering::Acquire) == 0 && !self.receiving.load(Ordering::Relaxed) {
            self.since_ms.store(self.now_ms(), Ordering::Relaxed);
            self.receiving.store(true, Ordering::Release);
        }
    }

    /// A request's headers arrived; it is in progress until the returned guard drops.
    fn begin(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        self.receiving.store(false, Ordering::Release);
        Busy(self.clone())
    }

    /// The deadline the connection is under now, if it is not answering a request.
    fn deadline(&self, limits: Limits) -> Option<(Instant, Expired)> {
        if self.busy.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = self.start + Duration::from_millis(self.since_ms.load(Ordering::Relaxed));
        Some(if self.receiving.load(Ordering::Acquire) {
            (since + limits.header_timeout, Expired::Header)
        } else {
            (since + limits.idle_timeout, Expired::Idle)
        })
    }

    /// Completes when the connection has been idle or receiving headers for too long.
    async fn expired(&self, limits: Limits) -> Expired {
        let recheck = limits.header_timeout.min(limits.idle_timeout);
        let timer = tokio::time::sleep(recheck);
        tokio::pin!(timer);
        loop {
            timer.as_mut().await;
            let now = Instant::now();
            match self.deadline(limits) {
                Some((at, expired)) if at <= now => return expired,
                Some((at, _)) => timer.as_mut().reset(at),
                None => timer.as_mut().reset(now + recheck),
            }
        }
    }
}

struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        let activity = &self.0;
        activity
            .since_ms
            .store(activity.now_ms(), Ordering::Relaxed);
        activity.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The TCP stream, noting when bytes arrive.
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let outcome = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(outcome, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.received();
        }
        outcome
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// A response body that keeps `_held` (the request's in-progress marks) until it is sent or
/// dropped, and says its size, so a sized answer goes out with `Content-Length`.
struct Holding<T> {
    body: Body,
    _held: T,
}

impl<T: Unpin> hyper::body::Body for Holding<T> {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}
