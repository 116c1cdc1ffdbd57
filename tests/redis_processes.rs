//! Across processes, on one Redis: demo servers over HTTP without embedded workers, and
//! `demo worker` processes running the tasks (the `redis` feature; the demo binary must be
//! built with it, as `cargo test --workspace --all-features` does).
//!
//! * `thousand_tasks_survive_killed_workers`: the acceptance run of issue 5: 2 servers,
//!   2 workers, 1,000 mixed tasks submitted through alternating servers and polled (and
//!   answered) through the other one, with a worker killed (`kill -9`) twice and replaced.
//! * `a_cancel_through_another_server_stops_the_tool_on_its_worker`: cross-process
//!   cancellation, within the acceptance's bound of two heartbeats.
//!
//! Nothing here sleeps to synchronise: each wait polls observable state (Redis' pending
//! list, `tasks/get`, the demo's ledger file) against a deadline.

mod common;

use std::{
    collections::BTreeMap,
    path::PathBuf,
    time::{Duration, Instant},
};

use ferrymcp::types::{CancelTaskParams, GetTaskParams, JsonObject, TaskPayload};
use ferrymcp_test_helpers::{client::TestClient, redis::RedisServer};
use futures::StreamExt as _;
use serde_json::{Value, json};

/// The lost-worker message of a failed task.
const LOST_WORKER: &str = ferrymcp::tasks::lost_worker::LOST_WORKER_MESSAGE;

/// How long any one wait may take before the test calls it broken.
const PATIENCE: Duration = Duration::from_secs(120);

/// The pause between two polls of a remote process's state.
const POLL_PAUSE: Duration = Duration::from_millis(20);

/// Held by each test for its whole run: the tests of this binary would otherwise run at
/// once, and the thousand tasks (with workers killed) of one starve the processes of the
/// other on a 2-vCPU machine, past the cancellation's bound of two heartbeats.
static ONE_FLEET_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A fleet's queue on the shared test Redis, with its lease.
struct Queue {
    url: String,
    key: String,
    redis: redis::aio::MultiplexedConnection,
}

async fn queue(name: &str, lease_ms: u64) -> Queue {
    let server = RedisServer::shared();
    let url = format!("{}&lease_ms={lease_ms}", server.queue_url(name));
    let queue_name = url
        .split("queue=")
        .nth(1)
        .and_then(|rest| rest.split('&').next())
        .expect("a queue name")
        .to_owned();
    let redis = redis::Client::open(server.url())
        .expect("the test Redis URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connect to the test Redis");
    Queue {
        url,
        key: format!("{{mcpt:{queue_name}}}:l"),
        redis,
    }
}

impl Queue {
    /// How many runs workers hold (the queue's leases).
    async fn held(&mut self) -> i64 {
        redis::cmd("ZCARD")
            .arg(&self.key)
            .query_async::<i64>(&mut self.redis)
            .await
            .expect("ZCARD")
    }

    /// Waits until workers hold at least `runs` runs.
    async fn wait_until_held(&mut self, runs: i64) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let held = self.held().await;
            if held >= runs {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "workers hold {held} runs, never {runs}"
            );
            tokio::time::sleep(POLL_PAUSE).await;
        }
    }
}

fn ledger_path(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "ferrymcp-ledger-{name}-{}-{}",
        std::process::id(),
        ferrymcp::tasks::new_task_id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

fn ledger_lines(path: &PathBuf) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

use common::{drive_task as drive, submit_task as submit, tasks_client as client};

/// The first text content of a `CallToolResult`.
fn text(result: &JsonObject) -> Option<&str> {
    result.get("content")?.get(0)?.get("text")?.as_str()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `child_multiply(i, 3)`.
    Fast,
    /// `count_task("k<i>")`, idempotent.
    Count,
    /// `sleep_task(0.2)`.
    Sleep,
    /// `sleep_task(2)`, submitted in bursts so that both workers hold runs when one is killed.
    LongSleep,
    /// `count_task("k<i>", 2000)`, in the same bursts: idempotent runs lost with a worker.
    LongCount,
    /// `confirm_task(i)`: one input round.
    Confirm,
}

fn kind(i: usize) -> Kind {
    if (300..340).contains(&i) || (600..640).contains(&i) {
        return if i.is_multiple_of(2) {
            Kind::LongSleep
        } else {
            Kind::LongCount
        };
    }
    match i % 10 {
        0 => Kind::Sleep,
        1 | 2 => Kind::Confirm,
        3..=5 => Kind::Count,
        _ => Kind::Fast,
    }
}

async fn submit_kind(client: &TestClient, i: usize) -> String {
    match kind(i) {
        Kind::Fast => submit(client, "child_multiply", json!({"a": i, "b": 3})).await,
        Kind::Count => {
            submit(
                client,
                "count_task",
                json!({"key": format!("k{i}"), "millis": 20}),
            )
            .await
        }
        Kind::LongCount => {
            submit(
                client,
                "count_task",
                json!({"key": format!("k{i}"), "millis": 2000}),
            )
            .await
        }
        Kind::Sleep => submit(client, "sleep_task", json!({"seconds": 0.2})).await,
        Kind::LongSleep => submit(client, "sleep_task", json!({"seconds": 2})).await,
        Kind::Confirm => submit(client, "confirm_task", json!({"value": i})).await,
    }
}

/// Whether `payload` is the right completion of task `i`.
fn completed_right(i: usize, payload: &TaskPayload) -> bool {
    let TaskPayload::Completed { result } = payload else {
        return false;
    };
    let structured = result
        .get("structuredContent")
        .and_then(|s| s.get("result"));
    match kind(i) {
        Kind::Fast => structured == Some(&json!(i * 3)),
        Kind::Confirm => structured == Some(&json!(i * 2)),
        Kind::Count | Kind::LongCount => text(result) == Some(&format!("counted k{i}")),
        Kind::Sleep => text(result) == Some("slept 0.2"),
        Kind::LongSleep => text(result) == Some("slept 2"),
    }
}

fn idempotent(i: usize) -> bool {
    matches!(kind(i), Kind::Count | Kind::LongCount)
}

fn lost_worker(payload: &TaskPayload) -> bool {
    matches!(payload, TaskPayload::Failed { error } if error.get("message") == Some(&json!(LOST_WORKER)))
}

/// The acceptance run: 2 servers (no embedded workers), 2 workers, 1 Redis; 1,000 tasks
/// through alternating servers, each polled and answered through the other; a worker
/// killed twice (while both hold runs) and replaced. Every task ends; idempotent ones all
/// complete with the right result (once each: one completion recorded per key, and the
/// tool's ledger shows it ran); other tasks complete right or fail for a lost worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thousand_tasks_survive_killed_workers() {
    let _alone = ONE_FLEET_AT_A_TIME.lock().await;
    let mut queue = queue("processes", 3000).await;
    let url = queue.url.clone();
    let ledger = ledger_path("processes");
    let ledger_env = ledger.display().to_string();
    let server_args = ["--tasks-url", url.as_str(), "--no-worker"];
    let worker_args = ["--tasks-url", url.as_str(), "--concurrency", "16"];
    let worker_env = [("MCP_DEMO_LEDGER", ledger_env.as_str())];
    // One test client submits all 1,000: lift its per-caller quota above that.
    let server_env = [("MCP_TASKS_MAX_TASKS_PER_CALLER", "100000")];
    let servers = [
        common::spawn_demo_http_with(&server_args, &server_env).await,
        common::spawn_demo_http_with(&server_args, &server_env).await,
    ];
    let mut workers = vec![
        common::spawn_demo_worker(&worker_args, &worker_env).await,
        common::spawn_demo_worker(&worker_args, &worker_env).await,
    ];
    let clients = [client(&servers[0].url).await, client(&servers[1].url).await];

    let total = 1000;
    let mut ids = Vec::with_capacity(total);
    let mut kills = 0;
    for i in 0..total {
        ids.push(submit_kind(&clients[i % 2], i).await);
        if i == 339 || i == 639 {
            // Both workers hold runs (each runs at most 16): kill one mid-work.
            queue.wait_until_held(17).await;
            let victim = kills % workers.len();
            let mut killed = workers.remove(victim);
            killed.child.start_kill().expect("kill -9 a worker");
            let _ = killed.child.wait().await;
            kills += 1;
            workers.push(common::spawn_demo_worker(&worker_args, &worker_env).await);
        }
    }
    assert_eq!(kills, 2);

    // Every task polled (and answered) through the server it was not submitted to.
    let outcomes: Vec<(usize, TaskPayload)> = futures::stream::iter(ids.iter().enumerate())
        .map(|(i, id)| {
            let other = &clients[(i + 1) % 2];
            async move { (i, drive(other, id).await) }
        })
        .buffer_unordered(32)
        .collect()
        .await;

    let ran = ledger_lines(&ledger);
    let mut runs_of: BTreeMap<&str, usize> = BTreeMap::new();
    for line in &ran {
        *runs_of.entry(line.as_str()).or_default() += 1;
    }
    let mut lost = 0;
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for (i, payload) in &outcomes {
        let i = *i;
        *by_kind
            .entry(format!("{:?} {:?}", kind(i), payload.status()))
            .or_default() += 1;
        if idempotent(i) {
            assert!(
                completed_right(i, payload),
                "idempotent task {i} must complete with its result: {payload:?}"
            );
            let key = format!("k{i}");
            assert_eq!(
                runs_of.get(key.as_str()).copied().unwrap_or(0),
                1,
                "the counting tool records exactly one finished run of {key}"
            );
        } else if lost_worker(payload) {
            lost += 1;
        } else {
            assert!(
                completed_right(i, payload),
                "task {i} ({:?}) must complete right or fail for a lost worker: {payload:?}",
                kind(i)
            );
        }
    }
    eprintln!(
        "outcomes: {by_kind:?}; lost-worker failures: {lost}; ledger lines: {}",
        ran.len()
    );
    assert_eq!(outcomes.len(), total, "no task is lost");
    assert!(
        lost >= 1,
        "a killed worker held non-idempotent runs: they fail as lost"
    );
    let count_tasks = (0..total).filter(|i| idempotent(*i)).count();
    assert_eq!(
        ran.len(),
        count_tasks,
        "the ledger holds one finished run per counting task, nothing else"
    );
    let _ = std::fs::remove_file(&ledger);
    drop(workers);
}

/// A `sleep_task(60)` running on worker C, cancelled through server B (it was submitted
/// through A): `tasks/get` on B says `cancelled`, and the tool's cancellation token fires on
/// C (it records so in the ledger) within two heartbeat intervals of the cancel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_through_another_server_stops_the_tool_on_its_worker() {
    let _alone = ONE_FLEET_AT_A_TIME.lock().await;
    let lease = Duration::from_millis(3000);
    let heartbeat = lease / 3;
    let mut queue = queue("cancel", 3000).await;
    let url = queue.url.clone();
    let ledger = ledger_path("cancel");
    let ledger_env = ledger.display().to_string();
    let server_args = ["--tasks-url", url.as_str(), "--no-worker"];
    let a = common::spawn_demo_http_with(&server_args, &[]).await;
    let b = common::spawn_demo_http_with(&server_args, &[]).await;
    let _c = common::spawn_demo_worker(
        &["--tasks-url", url.as_str()],
        &[("MCP_DEMO_LEDGER", ledger_env.as_str())],
    )
    .await;
    let (client_a, client_b) = (client(&a.url).await, client(&b.url).await);

    let id = submit(&client_a, "sleep_task", json!({"seconds": 60})).await;
    queue.wait_until_held(1).await;
    let sent = Instant::now();
    client_b
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .expect("tasks/cancel through B");
    let bound = heartbeat * 2;
    loop {
        let got = client_b
            .get_task(GetTaskParams::new(&id))
            .await
            .expect("tasks/get");
        if got.task.payload == TaskPayload::Cancelled {
            break;
        }
        assert!(
            sent.elapsed() < bound,
            "not cancelled on B within {bound:?}: {got:?}"
        );
        tokio::time::sleep(POLL_PAUSE).await;
    }
    loop {
        if ledger_lines(&ledger)
            .iter()
            .any(|line| line == "cancelled sleep_task 60")
        {
            break;
        }
        assert!(
            sent.elapsed() < bound,
            "the tool's cancellation token did not fire on the worker within {bound:?}"
        );
        tokio::time::sleep(POLL_PAUSE).await;
    }
    eprintln!(
        "cancel reached the tool {:?} after tasks/cancel (bound {bound:?})",
        sent.elapsed()
    );
    let _ = std::fs::remove_file(&ledger);
}

/// Metrics across a fleet: 4 idempotent `count_task`s on 2 workers (2 runs each), one worker
/// killed (`kill -9`) while both hold runs. The survivor's `/metrics` counts the 2 runs it
/// started again (`mcp_task_retries_total`) and every completed run; the lapsed leases are
/// counted as reruns by whichever process swept them; the server counts the 4 tasks it
/// created and reads the queue's counts from Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_shows_in_the_fleets_metrics() {
    use ferrymcp_test_helpers::metrics::Scrape;

    let _alone = ONE_FLEET_AT_A_TIME.lock().await;
    let mut queue = queue("metrics", 1000).await;
    let url = queue.url.clone();
    let server = common::spawn_demo_http_with(
        &["--tasks-url", url.as_str(), "--no-worker", "--metrics"],
        &[],
    )
    .await;
    let server_metrics = server.url.replace("/mcp", "/metrics");
    let worker_args = ["--tasks-url", url.as_str(), "--concurrency", "2"];
    let (mut victim, _) = common::spawn_demo_worker_with_metrics(&worker_args, &[]).await;
    let (_survivor, survivor_metrics) =
        common::spawn_demo_worker_with_metrics(&worker_args, &[]).await;
    let client = client(&server.url).await;

    let mut ids = Vec::new();
    for i in 0..4 {
        let arguments = json!({"key": format!("m{i}"), "millis": 2000});
        ids.push(submit(&client, "count_task", arguments).await);
    }
    // Each worker runs at most 2: both hold runs.
    queue.wait_until_held(4).await;
    let queued = Scrape::fetch(&server_metrics).await;
    assert_eq!(
        queued.value("mcp_tasks", &[("state", "running")]),
        Some(4.0),
        "{}",
        queued.text()
    );
    victim.child.start_kill().expect("kill -9 a worker");
    let _ = victim.child.wait().await;
    for id in &ids {
        let payload = drive(&client, id).await;
        assert!(
            matches!(payload, TaskPayload::Completed { .. }),
            "an idempotent task lost with its worker runs again: {payload:?}"
        );
    }

    let server_scrape = Scrape::fetch(&server_metrics).await;
    let survivor = Scrape::fetch(&survivor_metrics).await;
    let tool = [("tool", "count_task")];
    assert_eq!(
        server_scrape.value("mcp_tasks_created_total", &tool),
        Some(4.0),
        "{}",
        server_scrape.text()
    );
    assert_eq!(
        server_scrape.value("mcp_tasks", &[("state", "finished")]),
        Some(4.0)
    );
    assert_eq!(
        server_scrape.value("mcp_tasks", &[("state", "running")]),
        Some(0.0)
    );
    assert_eq!(
        survivor.value("mcp_task_retries_total", &tool),
        Some(2.0),
        "{}",
        survivor.text()
    );
    assert_eq!(
        survivor.value(
            "mcp_task_runs_total",
            &[("tool", "count_task"), ("outcome", "completed")]
        ),
        Some(4.0),
        "its own 2 runs and the 2 it took over: {}",
        survivor.text()
    );
    // The first runs waited for a worker; the reruns are not counted as waits.
    assert_eq!(survivor.value("mcp_task_wait_seconds", &[]), Some(2.0));
    let reruns = server_scrape.sum(
        "mcp_task_lost_worker_recoveries_total",
        &[("action", "rerun")],
    ) + survivor.sum(
        "mcp_task_lost_worker_recoveries_total",
        &[("action", "rerun")],
    );
    assert_eq!(reruns, 2.0, "{}\n{}", server_scrape.text(), survivor.text());
}

/// Runs the operators' command line on `queue` with `--json` and reads the answer.
async fn operate<T: serde::de::DeserializeOwned>(queue: &str, args: &[&str]) -> T {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    common::run_operator_cli(queue, &all).await.json()
}

async fn fleet(queue: &str) -> ferrymcp::tasks::operator::FleetStatus {
    operate(queue, &["status"]).await
}

/// Polls `status` until `done` holds of it.
async fn fleet_until(
    queue: &str,
    what: &str,
    done: impl Fn(&ferrymcp::tasks::operator::FleetStatus) -> bool,
) -> ferrymcp::tasks::operator::FleetStatus {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let status = fleet(queue).await;
        if done(&status) {
            return status;
        }
        assert!(Instant::now() < deadline, "never {what}: {status:?}");
        tokio::time::sleep(POLL_PAUSE).await;
    }
}

/// Issue 18's operator command line against a fleet on Redis (1 server, 2 `demo worker`
/// processes): `status` shows the queue, the runs and both workers with their heartbeat age;
/// `tasks` filters by status, tool and age; `inspect` shows the state, attempt, worker and
/// lease and never the arguments; `cancel` stops the run on its worker; a worker killed
/// turns stale and its non-idempotent runs fail as lost; `purge` forgets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue18_the_operator_cli_sees_and_steers_a_redis_fleet() {
    use ferrymcp::tasks::{backend::TaskRecord, operator::PurgeReport};

    let _alone = ONE_FLEET_AT_A_TIME.lock().await;
    let queue = queue("operator", 2000).await;
    let url = queue.url.clone();
    let server =
        common::spawn_demo_http_with(&["--tasks-url", url.as_str(), "--no-worker"], &[]).await;
    let worker_args = ["--tasks-url", url.as_str(), "--concurrency", "2"];
    let mut victim = common::spawn_demo_worker(&worker_args, &[]).await;
    let _survivor = common::spawn_demo_worker(&worker_args, &[]).await;
    let victim_pid = victim.child.id().expect("the victim's pid");
    let client = client(&server.url).await;

    let quick = submit(&client, "child_multiply", json!({"a": 6, "b": 7})).await;
    assert!(matches!(
        drive(&client, &quick).await,
        TaskPayload::Completed { .. }
    ));
    let mut held = Vec::new();
    for i in 0..4 {
        let arguments = json!({"key": format!("op-secret-{i}"), "millis": 60_000});
        held.push(submit(&client, "once_task", arguments).await);
    }
    // Both workers report themselves, each holding 2 runs.
    let status = fleet_until(&url, "4 runs held by 2 workers", |status| {
        status.tasks.running == 4
            && status.workers.len() == 2
            && status.workers.iter().all(|w| w.presence.running == 2)
    })
    .await;
    assert_eq!(
        (status.tasks.queued, status.tasks.finished),
        (0, 1),
        "{status:?}"
    );
    assert!(status.tasks.ended >= 1, "{status:?}");
    assert!(
        status
            .workers
            .iter()
            .all(|w| !w.stale && w.age_ms <= status.lease_ms),
        "{status:?}"
    );
    let worker_ids: Vec<&str> = status
        .workers
        .iter()
        .map(|w| w.presence.id.as_str())
        .collect();
    assert!(status.workers.iter().any(|w| w.presence.pid == victim_pid));

    let working: Vec<TaskRecord> = operate(
        &url,
        &["tasks", "--status", "working", "--tool", "once_task"],
    )
    .await;
    let mut listed: Vec<&str> = working.iter().map(|t| t.id.as_str()).collect();
    listed.sort_unstable();
    let mut expected: Vec<&str> = held.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(listed, expected);
    assert!(working.iter().all(|t| t.attempt == 1
        && t.worker.as_deref().is_some_and(|w| worker_ids.contains(&w))));
    let completed: Vec<TaskRecord> = operate(&url, &["tasks", "--status", "completed"]).await;
    assert_eq!(completed.len(), 1);
    assert_eq!(
        (completed[0].id.as_str(), completed[0].tool.as_str()),
        (quick.as_str(), "child_multiply")
    );
    let old: Vec<TaskRecord> = operate(&url, &["tasks", "--older-than", "1h"]).await;
    assert!(old.is_empty(), "{old:?}");

    let inspected = common::run_operator_cli(&url, &["--json", "inspect", &held[0]]).await;
    let record: TaskRecord = inspected.json();
    assert_eq!(record.status, ferrymcp::types::TaskStatus::Working);
    assert!(record.lease_until_ms.is_some() && record.worker.is_some());
    assert!(
        !inspected.stdout.contains("op-secret") && !inspected.stdout.contains("arguments"),
        "inspect shows no arguments: {}",
        inspected.stdout
    );
    let human = common::run_operator_cli(&url, &["inspect", &held[0]]).await;
    assert_eq!(human.code, Some(0), "{}", human.stderr);
    assert!(
        human.stdout.contains("attempts:  1 of 1"),
        "{}",
        human.stdout
    );

    // Cancelled by the operator: the client sees it, and the worker stops the run.
    let cancelled = common::run_operator_cli(&url, &["cancel", &held[0]]).await;
    assert_eq!(cancelled.code, Some(0), "{}", cancelled.stderr);
    assert!(matches!(
        drive(&client, &held[0]).await,
        TaskPayload::Cancelled
    ));
    let status = fleet_until(&url, "the cancelled run stopped on its worker", |status| {
        status
            .workers
            .iter()
            .map(|w| w.presence.running)
            .sum::<u32>()
            == 3
    })
    .await;
    let lost = status
        .workers
        .iter()
        .find(|w| w.presence.pid == victim_pid)
        .expect("the victim reports")
        .presence
        .running;

    victim.child.start_kill().expect("kill -9 a worker");
    let _ = victim.child.wait().await;
    fleet_until(&url, "the killed worker shown stale", |status| {
        status
            .workers
            .iter()
            .any(|w| w.presence.pid == victim_pid && w.stale)
    })
    .await;
    // Its non-idempotent runs fail as lost once their lease lapsed.
    let deadline = Instant::now() + PATIENCE;
    let failed: Vec<TaskRecord> = loop {
        let failed: Vec<TaskRecord> = operate(&url, &["tasks", "--status", "failed"]).await;
        if failed.len() == lost as usize {
            break failed;
        }
        assert!(Instant::now() < deadline, "{failed:?}");
        tokio::time::sleep(POLL_PAUSE).await;
    };
    assert!(failed.iter().all(|t| {
        t.error
            .as_ref()
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            == Some(LOST_WORKER)
    }));

    let purged: PurgeReport = operate(&url, &["purge"]).await;
    assert_eq!(purged.workers_forgotten, 1, "{purged:?}");
    let status = fleet(&url).await;
    assert_eq!(status.workers.len(), 1, "{status:?}");
    assert_ne!(status.workers[0].presence.pid, victim_pid);

    let unknown = common::run_operator_cli(&url, &["inspect", "no-such-task"]).await;
    assert_eq!(unknown.code, Some(1));
    assert!(unknown.stderr.contains("no task"), "{}", unknown.stderr);
    let usage = common::run_operator_cli(&url, &["tasks", "--status", "sleeping"]).await;
    assert_eq!(usage.code, Some(2), "{}", usage.stderr);
    for id in &held[1..] {
        let _ = client.cancel_task(CancelTaskParams::new(id.as_str())).await;
    }
}
