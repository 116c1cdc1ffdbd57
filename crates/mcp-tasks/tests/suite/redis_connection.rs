//! How [`RedisBackend`] connects, against real `redis-server` processes on 127.0.0.1: TLS
//! refuses a server its CA does not vouch for, with an error that names the URL without its
//! password; a frozen Redis (`SIGSTOP`: connections open, nothing answers) turns blocking
//! claims and ordinary commands into errors within their time limits instead of hangs;
//! dropping a backend while its Redis is frozen lets go of every connection at once; and a
//! killed event subscription comes back, its change feed saying that changes may have been
//! missed meanwhile.
//!
//! Needs the `redis` feature: `cargo test -p ferrymcp-tasks --features redis --test suite redis_connection::`.

use std::time::{Duration, Instant};

use ferrymcp_tasks::backend::{
    BackendError, Owner, TaskBackend, WorkerId,
    redis::{RedisBackend, RedisBackendError},
};
use ferrymcp_test_helpers::redis::{RedisCluster, RedisServer};

/// A bound that only proves an operation *ends*: far above every limit under test.
const ENDS_WITHIN: Duration = Duration::from_secs(30);

/// The clients connected to the Redis at `url` (its `CLIENT LIST`), asked on a connection
/// of our own.
async fn client_list(url: &str) -> String {
    let client = redis::Client::open(url).expect("a Redis URL");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect to Redis");
    redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut conn)
        .await
        .expect("CLIENT LIST")
}

/// Polls `CLIENT LIST` until `done` says yes, for at most [`ENDS_WITHIN`].
async fn until_clients(url: &str, what: &str, done: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + ENDS_WITHIN;
    loop {
        let list = client_list(url).await;
        if done(&list) {
            return;
        }
        assert!(Instant::now() < deadline, "never saw {what}:\n{list}");
        tokio::task::yield_now().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_ca_that_did_not_sign_the_server_is_refused_naming_the_url_without_its_password()
{
    let server = RedisServer::start_tls();
    // Another TLS server's CA: a valid CA file, but not the one that signed `server`.
    let other = RedisServer::start_tls();
    let wrong_ca = other.ca_file().expect("a CA file").display().to_string();
    let port = server.port();
    let url = format!("rediss://:hunter2@127.0.0.1:{port}/0?queue=tls&ca_file={wrong_ca}");
    let refused = tokio::time::timeout(ENDS_WITHIN, RedisBackend::connect(&url))
        .await
        .expect("the refusal comes in time");
    let error = match refused {
        Ok(_) => panic!("a server signed by another CA was trusted"),
        Err(error) => error,
    };
    assert!(
        matches!(error, RedisBackendError::Connect { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(!message.contains("hunter2"), "{message}");
    assert!(
        message.contains(&format!("rediss://:***@127.0.0.1:{port}/0")),
        "the message names the URL: {message}"
    );
    assert!(
        message.to_lowercase().contains("certificate") || message.contains("UnknownIssuer"),
        "the message says the certificate is the problem: {message}"
    );
    // The right CA connects (the whole suite runs in redis_tls_conformance).
    let ca = server.ca_file().expect("a CA file").display().to_string();
    let right = format!("{}?queue=tls&ca_file={ca}", server.url());
    RedisBackend::connect(&right)
        .await
        .unwrap_or_else(|e| panic!("the right CA is trusted: {e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_file_on_a_plain_url_or_a_missing_ca_file_is_a_bad_url() {
    let plain = RedisBackend::connect("redis://127.0.0.1:1/0?ca_file=/etc/ca.pem").await;
    assert!(
        matches!(&plain, Err(RedisBackendError::BadUrl { why, .. }) if why.contains("ca_file")),
        "{:?}",
        plain.err()
    );
    let missing =
        RedisBackend::connect("rediss://127.0.0.1:1/0?ca_file=/nonexistent/ferrymcp-ca.pem").await;
    assert!(
        matches!(&missing, Err(RedisBackendError::BadUrl { why, .. }) if why.contains("/nonexistent/ferrymcp-ca.pem")),
        "{:?}",
        missing.err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_claim_on_a_frozen_redis_fails_within_its_wait_plus_margin() {
    let redis = RedisServer::start_local();
    let backend = RedisBackend::connect(&redis.queue_url("frozen-claim"))
        .await
        .expect("connect");
    let wait = Duration::from_secs(3);
    let worker = WorkerId::new();
    let claim = tokio::spawn(async move {
        let started = Instant::now();
        let claimed = backend.claim(&worker, 1, wait).await;
        (claimed.map(|runs| runs.len()), started.elapsed())
    });
    // The claim found the queue empty and now blocks on its own connection.
    until_clients(redis.url(), "a blocked XREAD", |list| {
        list.contains("cmd=xread")
    })
    .await;
    redis.freeze();
    let ended = tokio::time::timeout(ENDS_WITHIN, claim).await;
    redis.thaw();
    let (claimed, took) = ended
        .expect("the claim ends although Redis never answers")
        .expect("the claim task");
    assert!(
        matches!(claimed, Err(BackendError::Unavailable(_))),
        "{claimed:?}"
    );
    assert!(
        took >= wait,
        "it waited its whole block time first ({took:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_on_a_frozen_redis_fails_after_the_response_timeout() {
    let redis = RedisServer::start_local();
    let url = format!("{}&response_timeout_ms=500", redis.queue_url("frozen-get"));
    let backend = RedisBackend::connect(&url).await.expect("connect");
    let owner = Owner::of(None);
    assert!(matches!(backend.get(&owner, "t-1").await, Ok(None)));
    redis.freeze();
    let got = tokio::time::timeout(ENDS_WITHIN, backend.get(&owner, "t-1")).await;
    redis.thaw();
    let got = got.expect("the read ends although Redis never answers");
    assert!(matches!(got, Err(BackendError::Unavailable(_))), "{got:?}");
    // Once Redis answers again, so does the backend.
    let deadline = Instant::now() + ENDS_WITHIN;
    while !matches!(backend.get(&owner, "t-1").await, Ok(None)) {
        assert!(Instant::now() < deadline, "the backend never recovered");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_backend_while_redis_is_frozen_returns_at_once_and_closes_its_connections() {
    let redis = RedisServer::start_local();
    let backend = RedisBackend::connect(&redis.queue_url("frozen-drop"))
        .await
        .expect("connect");
    // The event subscription is in place (a client subscribed to the queue's channels).
    until_clients(redis.url(), "the task event subscription", |list| {
        subscriber_id(list).is_some()
    })
    .await;
    redis.freeze();
    let dropped = tokio::time::timeout(
        ENDS_WITHIN,
        tokio::task::spawn_blocking(move || drop(backend)),
    )
    .await;
    redis.thaw();
    dropped
        .expect("dropping the backend does not wait on the frozen Redis")
        .expect("the dropping thread");
    // Its subscription let go of its connection too: no subscriber is left.
    until_clients(redis.url(), "no subscriber left", |list| {
        subscriber_id(list).is_none()
    })
    .await;
}

/// The id of the one client subscribed to channels (the queue's cancels and changes), in a
/// `CLIENT LIST`.
fn subscriber_id(list: &str) -> Option<String> {
    list.lines()
        .find(|line| line.contains(" sub=") && !line.contains(" sub=0 "))
        .and_then(|line| line.split(' ').next())
        .map(str::to_owned)
}

/// `CLIENT KILL TYPE pubsub` on the Redis at `url`: how many subscribers it cut.
async fn kill_subscribers(url: &str) -> i64 {
    let client = redis::Client::open(url).expect("a Redis URL");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect to Redis");
    redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut conn)
        .await
        .expect("CLIENT KILL")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_cancel_subscription_is_resubscribed() {
    let redis = RedisServer::start_local();
    let _backend = RedisBackend::connect(&redis.queue_url("resubscribe"))
        .await
        .expect("connect");
    let before = client_list(redis.url()).await;
    let first = subscriber_id(&before).unwrap_or_else(|| panic!("a subscriber:\n{before}"));
    assert_eq!(kill_subscribers(redis.url()).await, 1);
    // A new subscription (another client id) takes its place, after a backoff.
    until_clients(redis.url(), "a new subscriber", |list| {
        subscriber_id(list).is_some_and(|id| id != first)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_change_feed_says_changes_may_have_been_missed_then_reports_again() {
    use ferrymcp_tasks::backend::NewTask;
    let redis = RedisServer::start_local();
    let backend = RedisBackend::connect(&redis.queue_url("feed"))
        .await
        .expect("connect");
    let owner = Owner::of(None);
    let task = NewTask {
        id: "feed-1".to_owned(),
        owner: owner.clone(),
        caller: "anon:feed".to_owned(),
        tool: "t".to_owned(),
        version: None,
        arguments: Default::default(),
        context: Default::default(),
        ttl: Some(Duration::from_secs(60)),
        poll_interval: Duration::from_millis(100),
        max_attempts: 1,
    };
    backend.submit(task).await.expect("submit");
    assert!(backend.watch(&owner, "feed-1").await.expect("watch"));
    let mut changes = backend
        .changes()
        .expect("the Redis backend has a change feed");
    let first = subscriber_id(&client_list(redis.url()).await).expect("a subscriber");
    assert_eq!(kill_subscribers(redis.url()).await, 1);
    // Once subscribed again, the feed says changes may have been missed (an empty id).
    let missed = tokio::time::timeout(ENDS_WITHIN, changes.recv())
        .await
        .expect("the feed speaks again in time")
        .expect("the feed is open");
    assert_eq!(missed, "", "changes may have been missed while it was away");
    assert!(
        subscriber_id(&client_list(redis.url()).await).is_some_and(|id| id != first),
        "a new subscription"
    );
    // And a change of the watched task is reported on the new subscription.
    backend.cancel(&owner, "feed-1").await.expect("cancel");
    let changed = tokio::time::timeout(ENDS_WITHIN, changes.recv())
        .await
        .expect("the change in time")
        .expect("the feed is open");
    assert_eq!(changed, "feed-1");
}

/// A Redis whose password changes under the backend: the reconnection `AUTH` refuses is
/// not the backend's last word. Once the password it has is accepted again, so are its
/// requests (redis-rs's connection manager alone would answer "authentication failed" to
/// every request from then on, without trying to log in again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_refused_while_the_password_changes_is_tried_again_until_it_is_accepted() {
    let redis = RedisServer::start_local();
    let port = redis.port();
    let url = format!("redis://:first-pass@127.0.0.1:{port}/0?queue=rotated");
    password_rotation(&[port], &url, "uthentication").await;
}

/// The same on a Redis Cluster, whose nodes all change their password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_refused_by_a_cluster_while_the_password_changes_is_tried_again_until_it_is_accepted()
 {
    let cluster = RedisCluster::start();
    let hosts: Vec<String> = cluster
        .ports()
        .iter()
        .map(|port| format!("127.0.0.1:{port}"))
        .collect();
    let url = format!(
        "redis+cluster://:first-pass@{}/?queue=rotated",
        hosts.join(",")
    );
    // The cluster client reports a node it cannot log in to as a node it has no connection to.
    password_rotation(cluster.ports(), &url, "ClusterConnectionNotFound").await;
}

/// Sets the password `first-pass` on the Redis nodes at `ports`, connects a backend with
/// `url` (which has it), changes the password and drops every client's connection until a
/// request of the backend is refused for its login (an error saying `refused`), then sets
/// the password back and waits for the backend to be answered again.
async fn password_rotation(ports: &[u16], url: &str, refused: &str) {
    // Admin connections, opened before there is a password: they stay logged in.
    let mut admins = Vec::new();
    for port in ports {
        let admin =
            redis::Client::open(format!("redis://127.0.0.1:{port}/0")).expect("a Redis URL");
        admins.push(
            admin
                .get_multiplexed_async_connection()
                .await
                .expect("an admin connection"),
        );
    }
    set_password(&mut admins, "first-pass", false).await;
    let backend = RedisBackend::connect(url).await.expect("connect");
    let owner = Owner::of(None);
    assert!(matches!(backend.get(&owner, "t-1").await, Ok(None)));

    set_password(&mut admins, "second-pass", true).await;
    // Until a request is answered with the refused login (the reconnection has run).
    let deadline = Instant::now() + ENDS_WITHIN;
    loop {
        let got = backend.get(&owner, "t-1").await;
        if matches!(&got, Err(error) if error.to_string().contains(refused)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the login was never refused: {got:?}"
        );
    }
    set_password(&mut admins, "first-pass", false).await;
    let deadline = Instant::now() + ENDS_WITHIN;
    while !matches!(backend.get(&owner, "t-1").await, Ok(None)) {
        assert!(
            Instant::now() < deadline,
            "the backend never logged in again"
        );
    }
}

/// `CONFIG SET requirepass` on every node; with `kill`, every other client connection is
/// dropped too, so clients log in again.
async fn set_password(
    admins: &mut [redis::aio::MultiplexedConnection],
    password: &str,
    kill: bool,
) {
    for admin in admins {
        let () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("requirepass")
            .arg(password)
            .query_async(admin)
            .await
            .expect("CONFIG SET");
        if kill {
            let _: i64 = redis::cmd("CLIENT")
                .arg("KILL")
                .arg("TYPE")
                .arg("normal")
                .arg("SKIPME")
                .arg("yes")
                .query_async(admin)
                .await
                .expect("CLIENT KILL");
        }
    }
}
