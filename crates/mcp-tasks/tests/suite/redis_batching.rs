//! Group commit and wake-ups of [`RedisBackend`], observed on a Redis of its own: calls made
//! at once share script calls (Redis' own command counts say so) and each still gets its
//! own answer; the counts a batch changes are all changed (each item sees the ones before
//! it); a blocked claim is woken by a release, and nothing adds wake-ups while no claim
//! waits.
//!
//! Needs the `redis` feature: `cargo test -p ferrymcp-tasks --features redis --test suite redis_batching::`.

use crate::redis_tasks;

use std::{sync::Arc, time::Duration};

use ferrymcp_tasks::backend::{
    BackendError, Limit, NewTask, Owner, TaskBackend, TaskLimits, WorkerId, WriteAck,
    redis::{RedisBackend, RedisOptions},
};
use ferrymcp_test_helpers::redis::RedisServer;
use futures::future::join_all;

use redis_tasks::echo_task as task;

async fn raw(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .expect("URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connect")
}

/// Runs the command `args` on `redis` and reads its reply as `T`.
async fn command<T: redis::FromRedisValue>(
    redis: &mut redis::aio::MultiplexedConnection,
    args: &[&str],
) -> T {
    let mut command = redis::cmd(args[0]);
    for arg in &args[1..] {
        command.arg(*arg);
    }
    command
        .query_async(redis)
        .await
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// How many `EVALSHA` calls Redis has served since its counters were reset.
async fn evalsha_calls(redis: &mut redis::aio::MultiplexedConnection) -> u64 {
    let stats: String = command(redis, &["INFO", "commandstats"]).await;
    stats
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|calls| calls.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_made_at_once_share_script_calls_and_keep_their_own_answers() {
    let server = RedisServer::start();
    let options = RedisOptions::default().with_limits(TaskLimits::default().with_max_tasks(150));
    let backend = Arc::new(
        RedisBackend::connect_with(&server.queue_url("batching"), options)
            .await
            .expect("connect"),
    );
    let mut redis = raw(&server).await;
    let _: () = command(&mut redis, &["CONFIG", "RESETSTAT"]).await;
    // 200 submits at once, over a limit of 150: the first 150 are accepted, the rest are
    // refused, each with its own answer, though they went in a few script calls.
    let submits = (0..200).map(|i| {
        let backend = Arc::clone(&backend);
        async move { backend.submit(task(&format!("auth:caller-{i}"))).await }
    });
    let answers = join_all(submits).await;
    let calls = evalsha_calls(&mut redis).await;
    let accepted: Vec<_> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
    let refused = answers
        .iter()
        .filter(|a| matches!(a, Err(BackendError::Limit(refusal)) if refusal.limit == Limit::Tasks))
        .count();
    assert_eq!((accepted.len(), refused), (150, 50), "{answers:?}");
    assert!(calls < 100, "200 submits took {calls} script calls");
    // Each accepted task is there, under its own id.
    let owner = Owner::of(None);
    let views = join_all(accepted.iter().map(|view| backend.get(&owner, &view.id))).await;
    for (view, got) in accepted.iter().zip(views) {
        assert_eq!(got.expect("get").map(|got| got.id), Some(view.id.clone()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_taken_is_refused_alone_and_twice_in_one_batch() {
    let server = RedisServer::start();
    let backend = Arc::new(
        RedisBackend::connect_with(&server.queue_url("taken"), RedisOptions::default())
            .await
            .expect("connect"),
    );
    let taken = |answer: &Result<_, BackendError>| matches!(answer, Err(BackendError::Corrupt(message)) if message.contains("already taken"));
    let first = task("auth:alice");
    backend.submit(first.clone()).await.expect("submit");
    // The same id again, from another caller with another tool: refused, the task unchanged.
    let again = NewTask {
        caller: "auth:mallory".to_owned(),
        tool: "other".to_owned(),
        ..first.clone()
    };
    assert!(taken(&backend.submit(again).await));
    // At once (one batch): new tasks with the taken id among them, then with one new id
    // twice (which of the two wins is not specified).
    let at_once = |news: Vec<NewTask>| {
        let backend = Arc::clone(&backend);
        async move {
            let submits = news.into_iter().map(|new| {
                let backend = Arc::clone(&backend);
                async move { backend.submit(new).await }
            });
            let answers = join_all(submits).await;
            let refused: Vec<usize> = (0..answers.len()).filter(|&i| taken(&answers[i])).collect();
            assert!(answers.iter().all(|a| a.is_ok() || taken(a)), "{answers:?}");
            refused
        }
    };
    let others = || task("auth:carol");
    assert_eq!(at_once(vec![others(), first.clone(), others()]).await, [1]);
    let twice = task("auth:bob");
    let refused = at_once(vec![others(), twice.clone(), others(), twice]).await;
    assert!(refused == [1] || refused == [3], "refused {refused:?}");
    // The first task is still the one stored under its id: its run is an `echo`.
    backend
        .release(&first.owner, &first.id)
        .await
        .expect("release");
    let runs = backend
        .claim(&WorkerId::new(), 1, Duration::ZERO)
        .await
        .expect("claim");
    assert_eq!(
        runs.iter()
            .map(|r| (r.lease.task.as_str(), r.tool.as_str()))
            .collect::<Vec<_>>(),
        vec![(first.id.as_str(), "echo")]
    );
}

/// Submits `count` tasks of `caller` at once; how many were accepted, and the refusals.
async fn submit_at_once(
    backend: &Arc<RedisBackend>,
    caller: &str,
    count: usize,
) -> (Vec<NewTask>, Vec<Limit>) {
    let submits = (0..count).map(|_| {
        let backend = Arc::clone(backend);
        let new = task(caller);
        async move { (backend.submit(new.clone()).await, new) }
    });
    let mut accepted = Vec::new();
    let mut refused = Vec::new();
    for (answer, new) in join_all(submits).await {
        match answer {
            Ok(_) => accepted.push(new),
            Err(BackendError::Limit(refusal)) => refused.push(refusal.limit),
            Err(other) => panic!("submit: {other}"),
        }
    }
    (accepted, refused)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_made_at_once_free_every_place_they_held() {
    let server = RedisServer::start();
    let options =
        RedisOptions::default().with_limits(TaskLimits::default().with_max_tasks_per_caller(40));
    let backend = Arc::new(
        RedisBackend::connect_with(&server.queue_url("counts"), options)
            .await
            .expect("connect"),
    );
    let owner = Owner::of(None);
    // One caller fills its quota in one go: 40 accepted, 10 refused.
    let (accepted, refused) = submit_at_once(&backend, "auth:alice", 50).await;
    assert_eq!(accepted.len(), 40);
    assert_eq!(refused, vec![Limit::TasksPerCaller; 10]);
    join_all(accepted.iter().map(|new| backend.release(&owner, &new.id)))
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .expect("release");
    let worker = WorkerId::new();
    let mut runs = Vec::new();
    while runs.len() < 40 {
        let claimed = backend
            .claim(&worker, 40 - runs.len(), Duration::ZERO)
            .await
            .expect("claim");
        assert!(!claimed.is_empty(), "{} of 40 runs claimed", runs.len());
        runs.extend(claimed);
    }
    // Forty completions at once, in a few script calls: each leaves the counts.
    let result = serde_json::json!({});
    let acks = join_all(runs.iter().map(|run| backend.complete(&run.lease, &result))).await;
    for ack in acks {
        assert_eq!(ack.expect("complete"), WriteAck::Recorded);
    }
    // So the caller has its whole quota again, and not one place more.
    let (again, refused) = submit_at_once(&backend, "auth:alice", 41).await;
    assert_eq!(again.len(), 40, "places freed by the completions");
    assert_eq!(refused, vec![Limit::TasksPerCaller]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_claim_is_woken_by_a_release_and_nothing_wakes_nobody() {
    let server = RedisServer::start();
    let backend = Arc::new(
        RedisBackend::connect(&server.queue_url("wake"))
            .await
            .expect("connect"),
    );
    let prefix = backend.key_prefix().to_owned();
    let mut redis = raw(&server).await;
    let owner = Owner::of(None);
    // No claim waits: releases add no wake-ups.
    let quiet = task("auth:a");
    backend.submit(quiet.clone()).await.expect("submit");
    backend.release(&owner, &quiet.id).await.expect("release");
    let wakeups: u64 = command(&mut redis, &["XLEN", &format!("{prefix}:w")]).await;
    assert_eq!(wakeups, 0, "wake-ups without a waiting claim");
    let worker = WorkerId::new();
    let first = backend
        .claim(&worker, 1, Duration::ZERO)
        .await
        .expect("claim");
    assert_eq!(first.len(), 1);
    // A claim that waits up to a minute, then a release: the claim gets the run long before
    // its wait is over (the test's own timeout is half of it).
    let waiting = {
        let backend = Arc::clone(&backend);
        let worker = worker.clone();
        tokio::spawn(async move { backend.claim(&worker, 1, Duration::from_secs(60)).await })
    };
    // The claim has found nothing and says it waits.
    loop {
        let flagged: bool = command(&mut redis, &["EXISTS", &format!("{prefix}:wt")]).await;
        if flagged {
            break;
        }
        tokio::task::yield_now().await;
    }
    let next = task("auth:a");
    backend.submit(next.clone()).await.expect("submit");
    backend.release(&owner, &next.id).await.expect("release");
    let claimed = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the waiting claim was not woken")
        .expect("join")
        .expect("claim");
    assert_eq!(
        claimed
            .iter()
            .map(|run| &run.lease.task)
            .collect::<Vec<_>>(),
        vec![&next.id]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_redis_lost_are_loaded_again() {
    let server = RedisServer::start();
    let backend = RedisBackend::connect(&server.queue_url("reload"))
        .await
        .expect("connect");
    let owner = Owner::of(None);
    let first = task("auth:a");
    backend.submit(first.clone()).await.expect("submit");
    let mut redis = raw(&server).await;
    let _: () = command(&mut redis, &["SCRIPT", "FLUSH"]).await;
    // Batched, and alone: each script is loaded again and the call goes through.
    backend.release(&owner, &first.id).await.expect("release");
    let second = task("auth:a");
    backend.submit(second.clone()).await.expect("submit");
    let got = backend.get(&owner, &second.id).await.expect("get");
    assert_eq!(got.map(|view| view.id), Some(second.id));
}
