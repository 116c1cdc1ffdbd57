//! [`FaultProxy`]: a TCP proxy on a loopback port in front of one upstream address (a
//! Redis, an HTTP server...) that injects network faults on command: delay every chunk,
//! blackhole everything (a partition), cut every connection, refuse new ones, and restore.
//!
//! Point the code under test at [`FaultProxy::addr`] instead of the upstream, keep the
//! test's own observer connection straight to the upstream, and switch faults from the
//! test. Every switch applies at once to every connection; nothing here sleeps except
//! [`FaultProxy::delay`]'s injected latency.
//!
//! ```no_run
//! # async fn demo(redis: std::net::SocketAddr) -> std::io::Result<()> {
//! use ferrymcp_test_helpers::fault_proxy::FaultProxy;
//! let proxy = FaultProxy::start(redis).await?;
//! let url = format!("redis://{}/0", proxy.addr()); // give this to the processes under test
//! proxy.blackhole(); // Redis unreachable: connections hang, nothing gets through
//! proxy.restore(); // back: the hung connections are cut, so clients reconnect
//! # let _ = url;
//! # Ok(()) }
//! ```

use std::{
    io,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{
        TcpListener, TcpStream,
        tcp::{OwnedReadHalf, OwnedWriteHalf},
    },
    sync::watch,
    task::JoinHandle,
};

/// How the proxy treats traffic right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Forward both ways (after the configured delay).
    Forward,
    /// Forward nothing either way; hold every connection, new ones too.
    Blackhole,
    /// Close new connections at once; current ones are forwarded.
    Refuse,
}

/// What every connection task watches.
#[derive(Debug, Clone, Copy)]
struct Control {
    mode: Mode,
    /// How long each forwarded chunk waits.
    delay: Duration,
    /// Bumped by every cut: a connection opened before the bump closes.
    cuts: u64,
    /// The proxy was dropped: everything closes.
    stopped: bool,
}

/// A fault-injecting TCP proxy on `127.0.0.1`, in front of one upstream address. It runs
/// on the Tokio runtime it was started on, and stops (closing every connection) when
/// dropped.
///
/// | call | current connections | new connections |
/// |---|---|---|
/// | [`delay`](Self::delay) | each chunk waits, both ways | same |
/// | [`blackhole`](Self::blackhole) | stay open, nothing forwarded either way | accepted and held |
/// | [`cut`](Self::cut) | closed at once | forwarded |
/// | [`refuse`](Self::refuse) | forwarded | closed at once |
/// | [`restore`](Self::restore) | forwarded; blackholed ones are cut | forwarded |
///
/// ```no_run
/// # async fn demo(upstream: std::net::SocketAddr) -> std::io::Result<()> {
/// use std::time::Duration;
/// use ferrymcp_test_helpers::fault_proxy::FaultProxy;
/// let proxy = FaultProxy::start(upstream).await?;
/// proxy.delay(Duration::from_millis(50));
/// proxy.cut();
/// assert_eq!(proxy.connections(), 0);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    upstream: SocketAddr,
    control: Arc<watch::Sender<Control>>,
    counts: Arc<Counts>,
    acceptor: JoinHandle<()>,
}

/// The connections the proxy holds, and has accepted.
#[derive(Debug, Default)]
struct Counts {
    open: AtomicUsize,
    accepted: AtomicUsize,
}

impl FaultProxy {
    /// Listens on a free port of `127.0.0.1` and forwards every connection to `upstream`
    /// (connecting to it once per accepted connection), with no fault on. Must be called
    /// within a Tokio runtime.
    ///
    /// ```no_run
    /// # async fn demo() -> std::io::Result<()> {
    /// let upstream: std::net::SocketAddr = "127.0.0.1:6379".parse().unwrap();
    /// let proxy = ferrymcp_test_helpers::fault_proxy::FaultProxy::start(upstream).await?;
    /// assert_ne!(proxy.addr(), upstream);
    /// # Ok(()) }
    /// ```
    pub async fn start(upstream: SocketAddr) -> io::Result<FaultProxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (control, _) = watch::channel(Control {
            mode: Mode::Forward,
            delay: Duration::ZERO,
            cuts: 0,
            stopped: false,
        });
        let control = Arc::new(control);
        let counts = Arc::new(Counts::default());
        let acceptor = tokio::spawn(accept_loop(
            listener,
            upstream,
            Arc::clone(&control),
            Arc::clone(&counts),
        ));
        Ok(FaultProxy {
            addr,
            upstream,
            control,
            counts,
            acceptor,
        })
    }

    /// The address to connect to instead of the upstream.
    ///
    /// ```no_run
    /// # async fn demo(proxy: ferrymcp_test_helpers::fault_proxy::FaultProxy) {
    /// let url = format!("redis://{}/0", proxy.addr());
    /// # let _ = url; }
    /// ```
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The upstream address every connection is forwarded to.
    ///
    /// ```no_run
    /// # async fn demo(proxy: ferrymcp_test_helpers::fault_proxy::FaultProxy) {
    /// assert!(proxy.upstream().ip().is_loopback());
    /// # }
    /// ```
    pub fn upstream(&self) -> SocketAddr {
        self.upstream
    }

    /// Makes each forwarded chunk, either way, wait `delay` before it is written on
    /// (`Duration::ZERO` forwards at once again). Other faults are unchanged.
    ///
    /// ```no_run
    /// # async fn demo(proxy: ferrymcp_test_helpers::fault_proxy::FaultProxy) {
    /// proxy.delay(std::time::Duration::from_millis(200)); // a slow network
    /// # }
    /// ```
    pub fn delay(&self, delay: Duration) {
        self.control.send_modify(|control| control.delay = delay);
    }

    /// A partition: current connections stay open but nothing is forwarded either way (a
    /// chunk in flight is dropped), and new connections are accepted and held without
    /// reaching the upstream. Clients see a peer that never answers, as with a dead network
    /// path, until [`restore`](Self::restore) cuts those connections.
    ///
    /// ```no_run
    /// # async fn demo(proxy: ferrymcp_test_helpers::fault_proxy::FaultProxy) {
    /// proxy.blackhole();
    /// # }
    /// ```
    pub fn blackhole(&self) {
        self.control
            .send_modify(|control| control.mode = Mode::Blackhole);
    }

    /// Closes every current connection at once (both sides see the connection end); new
    /// connections are forwarded as the current mode says.
    ///
    /// ```no_run
    /// # async fn demo(proxy: ferrymcp_test_helpers::fault_proxy::FaultProxy) {
    /// proxy.cut(); // clients see a broken pipe or end of stream, then reconnect
    /// # }
    /// ```
    pub fn cut(&self) {
        self.control.send_modify(|control| control.cuts += 1);
    }

    /// Closes every new connection as soon as it is accepted (a server that is down);
    /// current connections are still forwarded.
    ///
    /// ```no_run
    /// # async fn demo(proxy: ferrymcp_test_helpers::fault_proxy::FaultProxy) {
    /// proxy.refuse();
    /// proxy.cut(); // and nobody stays connected either
    /// # }
    /// ```
    pub fn refuse(&self) {
        self.control
            .send_modify(|control| control.mode = Mode::Refuse);
    }

    /// Back to normal forwarding without delay. Connections held by a
    /// [`blackhole`](Self::blackhole) are cut (their streams may have lost bytes), so their
    /// clients reconnect; other connections go on.
    ///
    /// ```no_run
    /// # async fn demo(proxy: ferrymcp_test_helpers::fault_proxy::FaultProxy) {
    /// proxy.blackhole();
    /// proxy.restore();
    /// # }
    /// ```
    pub fn restore(&self) {
        self.control.send_modify(|control| {
            if control.mode == Mode::Blackhole {
                control.cuts += 1;
            }
            control.mode = Mode::Forward;
            control.delay = Duration::ZERO;
        });
    }

    /// How many client connections the proxy holds open right now (forwarded or held).
    ///
    /// ```no_run
    /// # async fn demo(proxy: ferrymcp_test_helpers::fault_proxy::FaultProxy) {
    /// proxy.cut();
    /// let _open_soon_after = proxy.connections();
    /// # }
    /// ```
    pub fn connections(&self) -> usize {
        self.counts.open.load(Ordering::SeqCst)
    }

    /// How many client connections the proxy has accepted and forwarded (or held) since it
    /// started, closed ones included: a client that reuses its connections opens few.
    ///
    /// ```no_run
    /// # async fn demo(proxy: ferrymcp_test_helpers::fault_proxy::FaultProxy) {
    /// let before = proxy.accepted();
    /// // ... requests through the proxy ...
    /// assert!(proxy.accepted() - before <= 1);
    /// # }
    /// ```
    pub fn accepted(&self) -> usize {
        self.counts.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.acceptor.abort();
        self.control.send_modify(|control| control.stopped = true);
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    control: Arc<watch::Sender<Control>>,
    counts: Arc<Counts>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let now = *control.borrow();
        if now.stopped {
            return;
        }
        if now.mode == Mode::Refuse {
            drop(client);
            continue;
        }
        let _ = client.set_nodelay(true);
        let guard = OpenGuard::new(&counts);
        tokio::spawn(serve(
            client,
            upstream,
            control.subscribe(),
            now.cuts,
            guard,
        ));
    }
}

/// Counts one accepted client connection, and it as open while it lives.
struct OpenGuard(Arc<Counts>);

impl OpenGuard {
    fn new(counts: &Arc<Counts>) -> Self {
        counts.accepted.fetch_add(1, Ordering::SeqCst);
        counts.open.fetch_add(1, Ordering::SeqCst);
        OpenGuard(Arc::clone(counts))
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One client connection: held while blackholed, then forwarded both ways until either
/// side ends it, a cut, or the proxy's end.
async fn serve(
    client: TcpStream,
    upstream: SocketAddr,
    mut control: watch::Receiver<Control>,
    cuts: u64,
    _open: OpenGuard,
) {
    let ended = move |c: &Control| c.cuts != cuts || c.stopped;
    let mut watcher = control.clone();
    let forwarded = async move {
        if control
            .wait_for(|c| c.mode != Mode::Blackhole)
            .await
            .is_err()
        {
            return;
        }
        let Ok(server) = TcpStream::connect(upstream).await else {
            return;
        };
        let _ = server.set_nodelay(true);
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = server.into_split();
        tokio::join!(
            pump(client_read, server_write, control.clone()),
            pump(server_read, client_write, control),
        );
    };
    tokio::select! {
        biased;
        _ = watcher.wait_for(ended) => {}
        () = forwarded => {}
    }
}

/// Copies `from` to `to` chunk by chunk, as the control says, until `from` ends (then
/// `to` is shut down) or either side fails.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    mut control: watch::Receiver<Control>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        if control
            .wait_for(|c| c.mode != Mode::Blackhole)
            .await
            .is_err()
        {
            return;
        }
        let read = tokio::select! {
            read = from.read(&mut buffer) => read,
            blackholed = control.wait_for(|c| c.mode == Mode::Blackhole) => {
                if blackholed.is_err() {
                    return;
                }
                continue;
            }
        };
        let n = match read {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let delay = control.borrow().delay;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if control.borrow().mode == Mode::Blackhole {
            // A partition loses what was in flight.
            continue;
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
    let _ = to.shutdown().await;
}
