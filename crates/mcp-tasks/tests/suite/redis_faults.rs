//! No lost transition on [`RedisBackend`], on a real Redis: a submitted task whose release
//! never comes is released by the sweeper; a submission whose answer was lost is undone,
//! never run; a claim retried under its claim id hands out the
//! same runs; worker writes are safe to retry; and after Redis restarts with AOF, every
//! accepted task is still there and the work goes on (scripts reloaded, leases recovered).
//!
//! Needs the `redis` feature: `cargo test -p ferrymcp-tasks --features redis --test suite redis_faults::`.

use crate::redis_tasks;

use std::time::{Duration, Instant};

use ferrymcp_tasks::backend::{
    BackendError, InputRound, NewTask, Owner, TaskBackend, WorkerId, WriteAck,
    redis::{RedisBackend, RedisOptions},
};
use ferrymcp_test_helpers::{fault_proxy::FaultProxy, redis::RedisServer};
use ferrymcp_types::TaskStatus;
use serde_json::json;

const LEASE: Duration = Duration::from_millis(400);

fn task(max_attempts: u32) -> NewTask {
    NewTask {
        max_attempts,
        ..redis_tasks::echo_task("auth:faults")
    }
}

async fn connect(url: &str) -> RedisBackend {
    RedisBackend::connect_with(url, RedisOptions::default().with_lease(LEASE))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Sweeps and claims until `n` runs are claimed (at most 10 s: a few leases).
async fn sweep_and_claim(backend: &RedisBackend, worker: &WorkerId, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut claimed = Vec::new();
    while claimed.len() < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} runs came back",
            claimed.len()
        );
        if let Err(error) = backend.expire().await {
            // Redis may still be coming back.
            note(&error);
        }
        if let Ok(runs) = backend.claim(worker, n, Duration::from_millis(50)).await {
            claimed.extend(runs.into_iter().map(|run| run.lease.task));
        }
    }
    claimed
}

fn note(error: &ferrymcp_tasks::backend::BackendError) {
    eprintln!("retrying after: {error}");
}

/// The tasks of the runs one claim of at most one run takes now, without waiting.
async fn claim_now(backend: &RedisBackend, worker: &WorkerId) -> Vec<String> {
    backend
        .claim(worker, 1, Duration::ZERO)
        .await
        .expect("claim")
        .into_iter()
        .map(|run| run.lease.task)
        .collect()
}

#[tokio::test]
async fn scope2_a_task_never_released_is_released_by_the_sweeper_after_a_lease() {
    let backend = connect(&RedisServer::shared().queue_url("fallback")).await;
    let new = task(1);
    backend.submit(new.clone()).await.expect("submit");
    let worker = WorkerId::new();
    assert!(
        claim_now(&backend, &worker).await.is_empty(),
        "not released yet"
    );
    let claimed = sweep_and_claim(&backend, &worker, 1).await;
    assert_eq!(claimed, vec![new.id.clone()]);
    let view = backend.get(&new.owner, &new.id).await.expect("get");
    assert_eq!(view.map(|v| v.status), Some(TaskStatus::Working));
}

#[tokio::test]
async fn scope2_a_first_run_claimed_before_its_release_goes_when_released() {
    let backend = connect(&RedisServer::shared().queue_url("claimed-early")).await;
    let new = task(1);
    backend.submit(new.clone()).await.expect("submit");
    let worker = WorkerId::new();
    assert!(
        claim_now(&backend, &worker).await.is_empty(),
        "a run went before its release"
    );
    backend.release(&new.owner, &new.id).await.expect("release");
    // No sweep: the release itself lets the run go.
    assert_eq!(claim_now(&backend, &worker).await, vec![new.id.clone()]);
    backend
        .release(&new.owner, &new.id)
        .await
        .expect("release again");
    assert!(
        claim_now(&backend, &WorkerId::new()).await.is_empty(),
        "a second release queued the run again"
    );
}

#[tokio::test]
async fn scope2_a_task_never_released_runs_when_first_claimed_after_a_lease() {
    let url = RedisServer::shared().queue_url("never-claimed");
    let backend = connect(&url).await;
    let new = task(1);
    let view = backend.submit(new.clone()).await.expect("submit");
    // Waits for the Redis clock to pass the release deadline, claiming nothing meanwhile.
    let mut redis = redis::Client::open(url.as_str())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("redis");
    let due = view.created_at_ms + u64::try_from(LEASE.as_millis()).expect("ms");
    loop {
        let (secs, micros): (u64, u64) = redis::cmd("TIME")
            .query_async(&mut redis)
            .await
            .expect("TIME");
        if secs * 1000 + micros / 1000 > due {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // No sweep: the claim that meets it past the deadline runs it.
    assert_eq!(
        claim_now(&backend, &WorkerId::new()).await,
        vec![new.id.clone()]
    );
}

#[tokio::test]
async fn scope2_a_released_task_is_not_released_twice_by_the_sweeper() {
    let backend = connect(&RedisServer::shared().queue_url("fallback-once")).await;
    let new = task(1);
    backend.submit(new.clone()).await.expect("submit");
    backend.release(&new.owner, &new.id).await.expect("release");
    let worker = WorkerId::new();
    let runs = backend
        .claim(&worker, 1, Duration::ZERO)
        .await
        .expect("claim");
    let run = runs.into_iter().next().expect("released");
    // Past the release deadline, with the run held (heartbeats keep its lease).
    let deadline = Instant::now() + LEASE * 2;
    while Instant::now() < deadline {
        backend
            .heartbeat(std::slice::from_ref(&run.lease))
            .await
            .expect("heartbeat");
        backend.expire().await.expect("expire");
        assert!(
            backend
                .claim(&WorkerId::new(), 1, Duration::from_millis(50))
                .await
                .expect("claim")
                .is_empty(),
            "the held run was queued again"
        );
    }
}

#[tokio::test]
async fn scope2_a_claim_retried_under_its_id_hands_out_the_same_runs() {
    let backend = connect(&RedisServer::shared().queue_url("claim-id")).await;
    for _ in 0..3 {
        let new = task(1);
        backend.submit(new.clone()).await.expect("submit");
        backend.release(&new.owner, &new.id).await.expect("release");
    }
    let worker = WorkerId::new();
    let first = backend
        .claim_with_id(&worker, 2, "retry-me")
        .await
        .expect("claim");
    let again = backend
        .claim_with_id(&worker, 2, "retry-me")
        .await
        .expect("claim");
    let leases = |runs: &[ferrymcp_tasks::backend::Claimed]| {
        runs.iter().map(|run| run.lease.clone()).collect::<Vec<_>>()
    };
    assert_eq!(first.len(), 2);
    assert_eq!(leases(&first), leases(&again), "the same runs, same fences");
    let other = backend
        .claim_with_id(&worker, 2, "another")
        .await
        .expect("claim");
    assert_eq!(other.len(), 1, "a new claim id gets the rest");
    assert!(!leases(&first).contains(&other[0].lease));
    // A run that ended since is not handed out again.
    backend
        .complete(&first[0].lease, &json!({}))
        .await
        .expect("complete");
    let after = backend
        .claim_with_id(&worker, 2, "retry-me")
        .await
        .expect("claim");
    assert_eq!(leases(&after), leases(&first[1..]));
}

#[tokio::test]
async fn scope2_worker_writes_are_safe_to_retry() {
    let backend = connect(&RedisServer::shared().queue_url("retry-writes")).await;
    for _ in 0..2 {
        let new = task(1);
        backend.submit(new.clone()).await.expect("submit");
        backend.release(&new.owner, &new.id).await.expect("release");
    }
    let runs = backend
        .claim(&WorkerId::new(), 2, Duration::ZERO)
        .await
        .expect("claim");
    let [done, parked] = &runs[..] else {
        panic!("two runs: {runs:?}")
    };
    for expected in [WriteAck::Recorded, WriteAck::Terminal] {
        assert_eq!(
            backend
                .complete(&done.lease, &json!({"n": 1}))
                .await
                .expect("complete"),
            expected
        );
    }
    let round = InputRound {
        requests: [("q".to_owned(), json!({"method": "elicitation/create"}))]
            .into_iter()
            .collect(),
        request_state: None,
    };
    for _ in 0..2 {
        assert_eq!(
            backend
                .request_input(&parked.lease, round.clone())
                .await
                .expect("request_input"),
            WriteAck::Recorded,
            "a retried parking lands once"
        );
    }
    let view = backend
        .get(&Owner::of(None), &parked.lease.task)
        .await
        .expect("get")
        .expect("kept");
    assert_eq!(view.status, TaskStatus::InputRequired);
    assert_eq!(
        view.input_requests.len(),
        1,
        "the retry asked nothing twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scope2_after_a_restart_with_aof_no_accepted_task_is_lost() {
    let dir = std::env::temp_dir().join(format!("mcpt-aof-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a dir for the AOF");
    let dir_arg = dir.to_string_lossy().into_owned();
    let aof = [
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--dir",
        dir_arg.as_str(),
    ];
    let first = RedisServer::start_with(&aof);
    let port = first.port().to_string();
    let url = format!("{}?queue=aof", first.url());
    let backend = connect(&url).await;
    let mut ids = Vec::new();
    for _ in 0..10 {
        let new = task(2);
        backend.submit(new.clone()).await.expect("submit");
        backend.release(&new.owner, &new.id).await.expect("release");
        ids.push(new.id);
    }
    let worker = WorkerId::new();
    let held = backend
        .claim(&worker, 4, Duration::ZERO)
        .await
        .expect("claim");
    assert_eq!(held.len(), 4);
    backend
        .complete(&held[0].lease, &json!({"before": true}))
        .await
        .expect("complete");

    drop(first);
    let mut args = vec!["--port", port.as_str()];
    args.extend_from_slice(&aof);
    let _second = RedisServer::start_with(&args);

    // The same backend reconnects; its scripts are loaded again.
    let owner = Owner::of(None);
    let deadline = Instant::now() + Duration::from_secs(10);
    let view = loop {
        match backend.get(&owner, &held[1].lease.task).await {
            Ok(view) => break view,
            Err(error) if Instant::now() < deadline => note(&error),
            Err(error) => panic!("Redis never came back: {error}"),
        }
    };
    assert_eq!(view.map(|v| v.status), Some(TaskStatus::Working));
    assert_eq!(
        backend
            .complete(&held[1].lease, &json!({"after": true}))
            .await
            .expect("complete after the restart"),
        WriteAck::Recorded
    );
    // The two runs still held lapse and come back; the six queued ones are still queued.
    let rest = sweep_and_claim(&backend, &WorkerId::new(), 8).await;
    assert_eq!(rest.len(), 8);
    let mut all_runs = rest.clone();
    all_runs.sort();
    all_runs.dedup();
    assert_eq!(all_runs.len(), 8, "no run was handed out twice");
    for id in &ids {
        let view = backend.get(&owner, id).await.expect("get");
        let status = view.map(|v| v.status);
        assert!(
            matches!(status, Some(TaskStatus::Working | TaskStatus::Completed)),
            "{id}: {status:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The backend on a fresh queue of the shared Redis, reached through a fault proxy and
/// waiting at most 300 ms for any answer; a direct connection to watch Redis with; the
/// queue's key prefix; and the queue's URL (straight to Redis).
async fn behind_a_proxy(
    name: &str,
) -> (
    RedisBackend,
    FaultProxy,
    redis::aio::MultiplexedConnection,
    String,
    String,
) {
    let url = RedisServer::shared().queue_url(name);
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (authority, path) = rest.split_once('/').expect("a path");
    let (credentials, host) = match authority.rsplit_once('@') {
        Some((credentials, host)) => (format!("{credentials}@"), host),
        None => (String::new(), authority),
    };
    let upstream = tokio::net::lookup_host(host)
        .await
        .expect("Redis' address")
        .next()
        .expect("an address");
    let proxy = FaultProxy::start(upstream).await.expect("proxy");
    let proxied = format!("{scheme}://{credentials}{}/{path}", proxy.addr());
    let backend = RedisBackend::connect_with(
        &proxied,
        RedisOptions::default()
            .with_lease(LEASE)
            .with_response_timeout(Duration::from_millis(300)),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let redis = redis::Client::open(url.as_str())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("redis");
    let prefix = backend.key_prefix().to_owned();
    (backend, proxy, redis, prefix, url)
}

/// Redis' clock (Unix ms).
async fn redis_now_ms(redis: &mut redis::aio::MultiplexedConnection) -> u64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(redis).await.expect("TIME");
    secs * 1000 + micros / 1000
}

async fn exists(redis: &mut redis::aio::MultiplexedConnection, key: &str) -> bool {
    redis::cmd("EXISTS")
        .arg(key)
        .query_async::<u64>(redis)
        .await
        .expect("EXISTS")
        == 1
}

#[tokio::test]
async fn r16_a_submission_whose_answer_is_lost_is_undone_and_never_runs() {
    lost_answer_is_undone("answer-lost", false).await;
}

#[tokio::test]
async fn r16_a_submission_its_caller_stopped_waiting_for_is_undone_and_never_runs() {
    lost_answer_is_undone("caller-gone", true).await;
}

/// A submission reaches Redis a second late, well after its server stopped waiting: on its
/// response timeout, or (`drop_early`) because the caller dropped the call before that.
async fn lost_answer_is_undone(queue: &str, drop_early: bool) {
    let (backend, proxy, mut redis, prefix, _) = behind_a_proxy(queue).await;
    let new = lose_an_answer(&backend, &proxy, &mut redis, &prefix, drop_early).await;
    let key = format!("{prefix}:t:{}", new.id);
    // Its task waits for a release that never comes; sweeps (as every server runs them)
    // until well past the release deadline never let it run.
    let stored = redis_now_ms(&mut redis).await;
    let past = stored + 2 * u64::try_from(LEASE.as_millis()).expect("ms");
    let worker = WorkerId::new();
    while redis_now_ms(&mut redis).await < past {
        if let Err(error) = backend.expire().await {
            note(&error);
        }
        if let Ok(runs) = backend.claim(&worker, 1, Duration::from_millis(50)).await {
            assert!(
                runs.is_empty(),
                "a submission whose client was told it failed ran"
            );
        }
    }
    assert!(!exists(&mut redis, &key).await, "the task is still stored");
    assert_eq!(backend.get(&new.owner, &new.id).await.expect("get"), None);
    let stats = backend.stats().await.expect("stats").expect("counts");
    assert_eq!((stats.queued, stats.waiting), (0, 0), "{stats:?}");
}

#[tokio::test]
async fn r16_an_undone_submission_that_never_arrived_keeps_its_id_taken() {
    let (backend, proxy, mut redis, prefix, _) = behind_a_proxy("never-arrived").await;
    let new = task(1);
    proxy.blackhole();
    let error = backend
        .submit(new.clone())
        .await
        .expect_err("no answer from a partitioned Redis");
    assert!(matches!(error, BackendError::Unavailable(_)), "{error}");
    // The partition lost the submission; the next sweep that reaches Redis undoes it.
    proxy.restore();
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Err(error) = backend.expire().await {
        assert!(Instant::now() < deadline, "Redis never came back: {error}");
    }
    let task_key = format!("{prefix}:t:{}", new.id);
    assert!(!exists(&mut redis, &task_key).await);
    assert!(
        exists(&mut redis, &format!("{prefix}:d:{}", new.id)).await,
        "the undone id is not taken"
    );
    // Should the submission still arrive, it is refused.
    let late = backend
        .submit(new.clone())
        .await
        .expect_err("the id is taken");
    assert!(matches!(late, BackendError::Corrupt(_)), "{late}");
    assert!(!exists(&mut redis, &task_key).await);
}

/// Sends a submission through `backend` that reaches Redis a second late, well after its
/// server stopped waiting (on its response timeout, or with `drop_early` because the caller
/// dropped the call first); returns it once Redis has stored its task.
async fn lose_an_answer(
    backend: &RedisBackend,
    proxy: &FaultProxy,
    redis: &mut redis::aio::MultiplexedConnection,
    prefix: &str,
    drop_early: bool,
) -> NewTask {
    // Redis has the submit script once one submission went through: the late one then runs
    // at once instead of failing with NOSCRIPT (whose answer nobody waits for any more). The
    // first task is cancelled: it neither runs nor counts as queued.
    let first = task(1);
    backend
        .submit(first.clone())
        .await
        .expect("a first submission");
    backend
        .cancel(&first.owner, &first.id)
        .await
        .expect("cancel the first task");
    let new = task(1);
    proxy.delay(Duration::from_secs(1));
    if drop_early {
        tokio::time::timeout(Duration::from_millis(50), backend.submit(new.clone()))
            .await
            .expect_err("the caller stops waiting first");
    } else {
        let error = backend
            .submit(new.clone())
            .await
            .expect_err("no answer within the response timeout");
        assert!(matches!(error, BackendError::Unavailable(_)), "{error}");
    }
    proxy.delay(Duration::ZERO);
    let key = format!("{prefix}:t:{}", new.id);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !exists(redis, &key).await {
        assert!(
            Instant::now() < deadline,
            "the late submission never arrived"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    new
}

#[tokio::test]
async fn r16_a_lost_submission_another_server_released_is_undone_until_claimed() {
    let (backend, proxy, mut redis, prefix, url) = behind_a_proxy("released-elsewhere").await;
    let other = connect(&url).await;
    let new = lose_an_answer(&backend, &proxy, &mut redis, &prefix, false).await;
    // Another server's claim meets it held and parks it; once the hold has passed, that
    // server's sweep releases it (its submitter's undo has not run yet).
    let worker = WorkerId::new();
    assert!(claim_now(&other, &worker).await.is_empty(), "it ran held");
    let hold: f64 = redis::cmd("ZSCORE")
        .arg(format!("{prefix}:s"))
        .arg(&new.id)
        .query_async(&mut redis)
        .await
        .expect("parked until its hold's deadline");
    while (redis_now_ms(&mut redis).await as f64) <= hold {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    other.expire().await.expect("the other server's sweep");
    let queued: Option<f64> = redis::cmd("ZSCORE")
        .arg(format!("{prefix}:r"))
        .arg(&new.id)
        .query_async(&mut redis)
        .await
        .expect("ZSCORE");
    assert!(queued.is_some(), "the sweep released it");
    // Its submitter's sweep undoes it before any worker claims it.
    backend.expire().await.expect("the submitter's sweep");
    assert!(!exists(&mut redis, &format!("{prefix}:t:{}", new.id)).await);
    assert!(
        other
            .claim(&worker, 1, Duration::from_millis(50))
            .await
            .expect("claim")
            .is_empty(),
        "a submission whose client was told it failed ran"
    );
}
