//! The HTTP/1.1 connections of one upstream's direct posts, kept open between posts.
//!
//! hyper's pooled client (hyper-util's legacy `Client`) serves any number of hosts: on every
//! request it looks a connection up by scheme and authority under a lock, formats the `Host`
//! header, rewrites the URI to its origin form, and spawns a task that waits for the
//! connection to be free again before it goes back to the pool. Every post of the proxy goes
//! to one endpoint, so [`Http1Pool`] keeps what those steps compute (the origin-form URI, the
//! `Host` header) and a stack of idle connections (hyper's `client::conn::http1`, each driven
//! by a task of its own): a post takes the connection used last, sends on it, and the
//! answer's body puts it back once it has been read to its end. An answer dropped before its
//! end takes its connection with it (HTTP/1 cannot skip the rest of a body).
//!
//! A connection idle for [`IDLE_CONNECTION`] is closed. A request that a reused connection
//! refused before sending a byte (the upstream had just closed it) is sent again on another
//! one, as hyper's pooled client does.

use std::{
    pin::Pin,
    sync::{Arc, Mutex, PoisonError, Weak},
    task::{Context, Poll},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{HeaderValue, Request, Response, header};
use http_body_util::Full;
use hyper::{
    body::{Body, Frame, Incoming, SizeHint},
    client::conn::http1::SendRequest,
};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use tower_service::Service as _;

/// How long a connection to an upstream may stay idle before it is closed.
pub(crate) const IDLE_CONNECTION: Duration = Duration::from_secs(90);

/// The connections of posts to one endpoint.
#[derive(Clone)]
pub(crate) struct Http1Pool {
    inner: Arc<Inner>,
}

struct Inner {
    connector: HttpsConnector<HttpConnector>,
    /// The endpoint, to connect to.
    endpoint: http::Uri,
    /// The endpoint's path and query, which a request names.
    origin_form: http::Uri,
    /// The endpoint's host and port, as the `Host` header names them.
    host: HeaderValue,
    /// Idle connections, the one used last on top.
    idle: Mutex<Vec<Idle>>,
    /// Whether the task that closes idle connections runs.
    reaping: std::sync::Once,
}

struct Idle {
    sender: SendRequest<Full<Bytes>>,
    since: Instant,
}

impl Idle {
    fn usable(&self, now: Instant) -> bool {
        !self.sender.is_closed() && now.saturating_duration_since(self.since) < IDLE_CONNECTION
    }
}

impl Http1Pool {
    /// Connections to `endpoint` (an absolute `http` or `https` URI) made by `connector`.
    pub(crate) fn new(
        endpoint: http::Uri,
        connector: HttpsConnector<HttpConnector>,
    ) -> Result<Self, String> {
        let authority = endpoint
            .authority()
            .ok_or_else(|| format!("the URL {endpoint} has no host"))?;
        let host = HeaderValue::from_str(authority.as_str())
            .map_err(|e| format!("the host of the URL {endpoint}: {e}"))?;
        let origin_form = endpoint
            .path_and_query()
            .map_or("/", http::uri::PathAndQuery::as_str)
            .parse()
            .map_err(|e| format!("the path of the URL {endpoint}: {e}"))?;
        Ok(Self {
            inner: Arc::new(Inner {
                connector,
                endpoint,
                origin_form,
                host,
                idle: Mutex::new(Vec::new()),
                reaping: std::sync::Once::new(),
            }),
        })
    }

    /// Sends `request` to the endpoint (whatever its URI says) on an idle connection or a
    /// new one; `Err` holds the reason the exchange broke off, with its causes.
    pub(crate) async fn send(
        &self,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<PooledBody>, String> {
        *request.uri_mut() = self.inner.origin_form.clone();
        request
            .headers_mut()
            .insert(header::HOST, self.inner.host.clone());
        loop {
            let (mut sender, reused) = match self.take_idle() {
                Some(sender) => (sender, true),
                // Boxed: connecting (TCP, TLS, the handshake) is rare and would otherwise
                // size every post's future.
                None => (Box::pin(self.connect()).await?, false),
            };
            // A reused connection may not have taken in the end of its last answer yet; a
            // new one takes its first request before its task first runs.
            if reused && !sender.is_ready() && sender.ready().await.is_err() {
                continue;
            }
            match sender.try_send_request(request).await {
                Ok(response) => {
                    let lease = Lease {
                        sender,
                        pool: Arc::downgrade(&self.inner),
                    };
                    return Ok(response.map(|body| PooledBody {
                        body,
                        lease: Some(lease),
                    }));
                }
                Err(mut error) => match error.take_message() {
                    // Refused before a byte was sent: the upstream closed the connection
                    // while it was idle.
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(crate::tls::chain(error.error())),
                },
            }
        }
    }

    /// The idle connection used last that is still open.
    fn take_idle(&self) -> Option<SendRequest<Full<Bytes>>> {
        let now = Instant::now();
        let mut idle = lock(&self.inner.idle);
        while let Some(connection) = idle.pop() {
            if connection.usable(now) {
                return Some(connection.sender);
            }
        }
        None
    }

    /// A new connection, driven by a task of its own until it closes.
    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, String> {
        let mut connector = self.inner.connector.clone();
        let io = connector
            .call(self.inner.endpoint.clone())
            .await
            .map_err(|error| crate::tls::chain(&*error))?;
        let (sender, connection) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|error| crate::tls::chain(&error))?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(error = %crate::tls::chain(&error), "an upstream connection ended");
            }
        });
        self.inner.reaping.call_once(|| {
            tokio::spawn(reap(Arc::downgrade(&self.inner)));
        });
        Ok(sender)
    }
}

/// Closes the idle connections of `pool` that have been idle too long, until the pool is
/// gone.
async fn reap(pool: Weak<Inner>) {
    loop {
        tokio::time::sleep(IDLE_CONNECTION / 3).await;
        let Some(pool) = pool.upgrade() else { return };
        let now = Instant::now();
        lock(&pool.idle).retain(|connection| connection.usable(now));
    }
}

fn lock(idle: &Mutex<Vec<Idle>>) -> std::sync::MutexGuard<'_, Vec<Idle>> {
    idle.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A connection lent to one exchange.
struct Lease {
    sender: SendRequest<Full<Bytes>>,
    pool: Weak<Inner>,
}

impl Lease {
    /// Puts the connection back among the idle ones.
    fn release(self) {
        if self.sender.is_closed() {
            return;
        }
        if let Some(pool) = self.pool.upgrade() {
            lock(&pool.idle).push(Idle {
                sender: self.sender,
                since: Instant::now(),
            });
        }
    }
}

/// The body of an answer; its connection goes back to the pool once the body has been
/// read to its end.
pub(crate) struct PooledBody {
    body: Incoming,
    lease: Option<Lease>,
}

impl Body for PooledBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => {
                if let Some(lease) = self.lease.take() {
                    lease.release();
                }
            }
            Poll::Ready(Some(Err(_))) => self.lease = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for PooledBody {
    fn drop(&mut self) {
        // An answer with nothing left to read (an empty one, or one whose last frame was
        // read) frees its connection even when nobody polled for the end.
        if self.body.is_end_stream()
            && let Some(lease) = self.lease.take()
        {
            lease.release();
        }
    }
}
