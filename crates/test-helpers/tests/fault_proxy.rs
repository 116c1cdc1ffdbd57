//! `FaultProxy` against a local echo server on 127.0.0.1: each fault, as a client and the
//! upstream observe it. Waits are on observable state (bytes read, an end of stream, the
//! echo server's byte count), each bounded so that a broken proxy fails instead of hanging.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use ferrymcp_test_helpers::fault_proxy::FaultProxy;
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
};

/// The longest any one step may take before the test calls the proxy broken.
const BOUND: Duration = Duration::from_secs(10);

/// An echo server on a loopback port; counts the bytes it received.
struct Echo {
    addr: SocketAddr,
    received: Arc<AtomicUsize>,
    accepted: Arc<AtomicUsize>,
}

async fn echo() -> Echo {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let received = Arc::new(AtomicUsize::new(0));
    let accepted = Arc::new(AtomicUsize::new(0));
    let (r, a) = (Arc::clone(&received), Arc::clone(&accepted));
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            a.fetch_add(1, Ordering::SeqCst);
            let r = Arc::clone(&r);
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                while let Ok(n) = stream.read(&mut buffer).await {
                    if n == 0 {
                        break;
                    }
                    r.fetch_add(n, Ordering::SeqCst);
                    if stream.write_all(&buffer[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    Echo {
        addr,
        received,
        accepted,
    }
}

/// Sends `message` and reads its echo back, within [`BOUND`].
async fn round_trip(stream: &mut TcpStream, message: &[u8]) {
    stream.write_all(message).await.expect("write");
    let mut back = vec![0u8; message.len()];
    tokio::time::timeout(BOUND, stream.read_exact(&mut back))
        .await
        .expect("the echo came back in time")
        .expect("read the echo");
    assert_eq!(back, message);
}

/// Whether the stream ends (end of stream or a reset) within [`BOUND`], without any data.
async fn ends(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(BOUND, stream.read(&mut byte)).await,
        Ok(Ok(0) | Err(_))
    )
}

async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + BOUND;
    while !condition() {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn forwards_both_ways_and_counts_connections() {
    let upstream = echo().await;
    let proxy = FaultProxy::start(upstream.addr).await.expect("start");
    assert_eq!(proxy.upstream(), upstream.addr);
    let mut a = TcpStream::connect(proxy.addr()).await.expect("connect");
    let mut b = TcpStream::connect(proxy.addr()).await.expect("connect");
    round_trip(&mut a, b"hello").await;
    round_trip(&mut b, b"world").await;
    assert_eq!(proxy.connections(), 2);
    drop(a);
    wait_until("the closed connection is no longer counted", || {
        proxy.connections() == 1
    })
    .await;
    round_trip(&mut b, b"still here").await;
}

#[tokio::test]
async fn delay_makes_each_chunk_wait() {
    let upstream = echo().await;
    let proxy = FaultProxy::start(upstream.addr).await.expect("start");
    let mut stream = TcpStream::connect(proxy.addr()).await.expect("connect");
    round_trip(&mut stream, b"warm").await;
    let delay = Duration::from_millis(150);
    proxy.delay(delay);
    let started = Instant::now();
    round_trip(&mut stream, b"slow").await;
    // One chunk each way: at least two delays.
    assert!(
        started.elapsed() >= delay * 2,
        "a delayed round trip took {:?}",
        started.elapsed()
    );
    proxy.delay(Duration::ZERO);
    round_trip(&mut stream, b"fast again").await;
}

#[tokio::test]
async fn blackhole_forwards_nothing_holds_new_connections_and_restore_cuts_them() {
    let upstream = echo().await;
    let proxy = FaultProxy::start(upstream.addr).await.expect("start");
    let mut old = TcpStream::connect(proxy.addr()).await.expect("connect");
    round_trip(&mut old, b"before").await;
    let before = upstream.received.load(Ordering::SeqCst);

    proxy.blackhole();
    old.write_all(b"lost in the partition")
        .await
        .expect("the write is accepted locally");
    let mut held = TcpStream::connect(proxy.addr())
        .await
        .expect("a new connection is accepted");
    held.write_all(b"also lost").await.expect("write");
    wait_until("both connections are held open", || {
        proxy.connections() == 2
    })
    .await;
    // The held connection never reached the upstream.
    assert_eq!(upstream.accepted.load(Ordering::SeqCst), 1);

    proxy.restore();
    assert!(ends(&mut old).await, "restore cuts a blackholed connection");
    assert!(ends(&mut held).await, "restore cuts a held connection");
    assert_eq!(
        upstream.received.load(Ordering::SeqCst),
        before,
        "nothing written during the blackhole reached the upstream"
    );
    assert_eq!(upstream.accepted.load(Ordering::SeqCst), 1);
    let mut fresh = TcpStream::connect(proxy.addr()).await.expect("connect");
    round_trip(&mut fresh, b"after").await;
}

#[tokio::test]
async fn cut_closes_current_connections_and_forwards_new_ones() {
    let upstream = echo().await;
    let proxy = FaultProxy::start(upstream.addr).await.expect("start");
    let mut a = TcpStream::connect(proxy.addr()).await.expect("connect");
    let mut b = TcpStream::connect(proxy.addr()).await.expect("connect");
    round_trip(&mut a, b"a").await;
    round_trip(&mut b, b"b").await;
    proxy.cut();
    assert!(ends(&mut a).await, "a is cut");
    assert!(ends(&mut b).await, "b is cut");
    wait_until("no connection is counted", || proxy.connections() == 0).await;
    let mut c = TcpStream::connect(proxy.addr()).await.expect("connect");
    round_trip(&mut c, b"c").await;
}

#[tokio::test]
async fn refuse_closes_new_connections_and_keeps_current_ones() {
    let upstream = echo().await;
    let proxy = FaultProxy::start(upstream.addr).await.expect("start");
    let mut current = TcpStream::connect(proxy.addr()).await.expect("connect");
    round_trip(&mut current, b"one").await;
    proxy.refuse();
    let mut refused = TcpStream::connect(proxy.addr())
        .await
        .expect("the listener still accepts");
    assert!(
        ends(&mut refused).await,
        "a new connection is closed at once"
    );
    round_trip(&mut current, b"two").await;
    proxy.restore();
    let mut again = TcpStream::connect(proxy.addr()).await.expect("connect");
    round_trip(&mut again, b"three").await;
    round_trip(&mut current, b"four").await;
}

#[tokio::test]
async fn drop_closes_every_connection() {
    let upstream = echo().await;
    let proxy = FaultProxy::start(upstream.addr).await.expect("start");
    let addr = proxy.addr();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    round_trip(&mut stream, b"x").await;
    drop(proxy);
    assert!(
        ends(&mut stream).await,
        "dropping the proxy closes its connections"
    );
    let refused = match TcpStream::connect(addr).await {
        Err(_) => true,
        Ok(mut late) => ends(&mut late).await,
    };
    assert!(refused, "nothing listens after the drop");
}
