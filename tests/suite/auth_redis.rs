//! Two principals' tasks on the Redis engine, through two replicas of the demo, each an
//! OAuth resource server for the same public URL (issue 13, AU19, AU20): a task belongs to
//! the verified principal that submitted it, on every replica; another principal's
//! `tasks/get`, `tasks/update` and `tasks/cancel` answer exactly as for an unknown id. The
//! replicas seal credentials with a rotated key list (`new,old`): at rest Redis holds the
//! owner only as a tag under the new key and the caller only sealed.
//!
//! And the hook around task runs (`Middleware::on_run_tool`) across processes: a replica
//! without a worker takes alice's submissions, a `demo worker` process runs them, and the
//! demo's run audit (`MCP_DEMO_RUN_LOG`) shows the hooks ran in the worker, at the root and
//! at the mounted child, with alice's client id and the tool's name in each namespace,
//! while the replica that took the submissions ran none.

use crate::common;

use std::time::{Duration, Instant};

use ferrymcp_test_helpers::{
    auth_server::{AuthServer, CLIENT_A, CLIENT_B},
    http::post_2026_to,
    redis::RedisServer,
};
use serde_json::{Value, json};

/// How long a task may take to complete on the shared Redis.
const PATIENCE: Duration = Duration::from_secs(60);

/// `MCP_TASKS_CREDENTIALS_KEY` of both replicas: a new key (all 8s), then an old one (all 7s).
const KEYS: &str =
    "CAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg=,BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

/// Every field of task `id` of the queue `queue_url` names, as Redis holds them.
async fn stored_task(queue_url: &str, id: &str) -> Vec<(String, String)> {
    let queue = queue_url
        .split_once("queue=")
        .map(|(_, queue)| queue)
        .unwrap_or_else(|| panic!("a queue URL: {queue_url}"));
    let mut redis = redis::Client::open(RedisServer::shared().url())
        .expect("URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    redis::cmd("HGETALL")
        .arg(format!("{{mcpt:{queue}}}:t:{id}"))
        .query_async(&mut redis)
        .await
        .expect("HGETALL")
}

/// Polls `tasks/get` until task `id` is no longer working; the final answer.
async fn until_done(url: &str, token: &str, id: &str) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let status = send(url, token, "tasks/get", json!({"taskId": id})).await;
        if status["result"]["status"] != "working" {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "{id} still working after {PATIENCE:?}"
        );
        // The demo's pollIntervalMs paces a real client the same way.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The lines of the file at `path` (none when it does not exist).
fn lines_of(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A 2026-07-28 request with the tasks opt-in and `token`; the JSON-RPC answer.
async fn send(url: &str, token: &str, method: &str, params: Value) -> Value {
    let capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let answer = post_2026_to(url, Some(token), method, params, capabilities).await;
    assert_eq!(answer.status, 200, "{method}: {answer:?}");
    answer.body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn au19_au20_two_principals_tasks_through_two_replicas_on_redis() {
    let auth = AuthServer::shared();
    let queue = RedisServer::shared().queue_url("auth-replicas");
    // Both replicas stand for one public URL, the tokens' audience.
    let port_a = common::free_port();
    let public = format!("http://127.0.0.1:{port_a}/mcp");
    let args = [
        "--auth-issuer",
        auth.issuer(),
        "--auth-audience",
        public.as_str(),
        "--tasks-url",
        queue.as_str(),
    ];
    let envs = [("MCP_TASKS_CREDENTIALS_KEY", KEYS)];
    let replica_a = common::spawn_demo_http_on(port_a, &args, &envs).await;
    let replica_b = common::spawn_demo_http_on(common::free_port(), &args, &envs).await;
    let alice = auth.token(CLIENT_A, &public, "child").await;
    let bob = auth.token(CLIENT_B, &public, "child").await;

    // alice submits on replica A.
    let created = send(
        &replica_a.url,
        &alice,
        "tools/call",
        json!({"name": "child_multiply", "arguments": {"a": 6, "b": 7}}),
    )
    .await;
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned();

    // At rest: neither the owner nor the caller in plaintext; the owner tagged under the
    // new key.
    let sealer = ferrymcp::tasks::sealing::Sealer::from_base64(KEYS).expect("the keys");
    let fields = stored_task(&queue, &id).await;
    assert!(!fields.is_empty(), "the task is stored");
    for (field, value) in &fields {
        assert!(
            !value.contains(CLIENT_A),
            "{field} names alice at rest: {value}"
        );
    }
    let owner = fields.iter().find(|(field, _)| field == "owner");
    assert!(
        owner.is_some_and(|(_, tag)| tag.starts_with(&format!("{}.", sealer.key_id()))),
        "the owner's tag under the new key: {owner:?}"
    );
    if let Some((_, context)) = fields.iter().find(|(field, _)| field == "ctx") {
        let sealed = format!("sealed:v2:{}:", sealer.key_id());
        assert!(context.starts_with(&sealed), "{context}");
    }

    // bob, on either replica, gets exactly what an unknown id gets.
    let unknown = "00000000-0000-4000-8000-000000000000";
    for replica in [&replica_a.url, &replica_b.url] {
        for (method, params) in [
            ("tasks/get", json!({"taskId": id})),
            ("tasks/cancel", json!({"taskId": id})),
            ("tasks/update", json!({"taskId": id, "inputResponses": {}})),
        ] {
            let foreign = send(replica, &bob, method, params.clone()).await;
            let mut for_unknown = params.clone();
            for_unknown["taskId"] = json!(unknown);
            let none = send(replica, &bob, method, for_unknown).await;
            let shown = |answer: &Value| {
                answer["error"]
                    .to_string()
                    .replace(&id, "<id>")
                    .replace(unknown, "<id>")
            };
            assert!(foreign["error"].is_object(), "{method} by bob: {foreign}");
            assert_eq!(
                shown(&foreign),
                shown(&none),
                "{method} by bob on {replica}"
            );
        }
    }

    // alice reads it from replica B, to completion: bob's attempts changed nothing.
    let done = until_done(&replica_b.url, &alice, &id).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["structuredContent"]["result"], 42,
        "{done}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_hooks_run_in_the_worker_process_with_the_submitter_and_the_tool() {
    let auth = AuthServer::shared();
    let queue = RedisServer::shared().queue_url("run-hooks");
    let port = common::free_port();
    let public = format!("http://127.0.0.1:{port}/mcp");
    let run_log = |who: &str| {
        std::env::temp_dir().join(format!(
            "ferrymcp-run-log-{who}-{}-{}",
            std::process::id(),
            ferrymcp::tasks::new_task_id()
        ))
    };
    let (server_log, worker_log) = (run_log("server"), run_log("worker"));
    let server_log_env = server_log.display().to_string();
    let worker_log_env = worker_log.display().to_string();
    let server = common::spawn_demo_http_on(
        port,
        &[
            "--auth-issuer",
            auth.issuer(),
            "--auth-audience",
            public.as_str(),
            "--tasks-url",
            queue.as_str(),
            "--no-worker",
        ],
        &[
            ("MCP_TASKS_CREDENTIALS_KEY", KEYS),
            ("MCP_DEMO_RUN_LOG", server_log_env.as_str()),
        ],
    )
    .await;
    let _worker = common::spawn_demo_worker(
        &["--tasks-url", queue.as_str()],
        &[
            ("MCP_TASKS_CREDENTIALS_KEY", KEYS),
            ("MCP_DEMO_RUN_LOG", worker_log_env.as_str()),
        ],
    )
    .await;
    let alice = auth.token(CLIENT_A, &public, "child").await;

    let mut expected = Vec::new();
    for (tool, arguments, owner_tool, answer) in [
        (
            "child_multiply",
            json!({"a": 6, "b": 7}),
            Some("multiply"),
            42,
        ),
        ("parent_tool", json!({"value": 3}), None, 30),
    ] {
        let created = send(
            &server.url,
            &alice,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
        .await;
        let id = created["result"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a task: {created}"))
            .to_owned();
        let done = until_done(&server.url, &alice, &id).await;
        assert_eq!(done["result"]["status"], "completed", "{done}");
        assert_eq!(
            done["result"]["result"]["structuredContent"]["result"], answer,
            "{done}"
        );
        expected.push(format!("demo:before {tool} {id} {CLIENT_A}"));
        if let Some(owner_tool) = owner_tool {
            expected.push(format!("child:before {owner_tool} {id} {CLIENT_A}"));
            expected.push(format!("child:after {owner_tool} {id} ok"));
        }
        expected.push(format!("demo:after {tool} {id} ok"));
    }

    assert_eq!(lines_of(&worker_log), expected);
    assert_eq!(lines_of(&server_log), Vec::<String>::new());
    let _ = std::fs::remove_file(&worker_log);
}
