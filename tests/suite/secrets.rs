//! Secrets and errors (issue 12, scope 5): passwords in task backend URLs never appear in
//! `Debug` output, in what the demo prints, or in what a client reads; a backend failure
//! reaches the client as `-32603` "The task store is unavailable; retry later (id: …)", and
//! the same id is in the server's log with the details.
//!
//! The demo cases run the demo binary (built with `--features redis`, as
//! `cargo test --all-features` does) against a disposable `redis-server` that needs the
//! password, started here and killed mid-test.

use crate::common;

use ferrymcp::tasks::{ConnectError, TasksConfig, connect};

const PASSWORD: &str = "hunter2";

/// Issue 12 scope 5: `TasksConfig`'s `Debug` hides the Redis password.
#[test]
fn issue12_tasks_config_debug_hides_the_redis_password() {
    let config = TasksConfig::default().with_url(format!("redis://:{PASSWORD}@db.internal:6379/0"));
    let shown = format!("{config:?}");
    assert!(!shown.contains(PASSWORD), "{shown}");
    assert!(shown.contains("redis://:***@db.internal:6379/0"), "{shown}");
    let pretty = format!("{config:#?}");
    assert!(!pretty.contains(PASSWORD), "{pretty}");
}

/// Issue 12 scope 5: a URL the engine cannot serve is named in the start-up error without
/// its password, in `Display` and in `Debug`.
#[tokio::test]
async fn issue12_backend_url_errors_hide_the_password() {
    let config = TasksConfig::default().with_url(format!("nats://app:{PASSWORD}@queue:4222/q"));
    let error: ConnectError = connect(&config).await.expect_err("an unsupported URL");
    for shown in [error.to_string(), format!("{error:?}")] {
        assert!(!shown.contains(PASSWORD), "{shown}");
        assert!(shown.contains("nats://app:***@queue:4222/q"), "{shown}");
    }
}

#[cfg(feature = "redis")]
mod with_redis {
    use std::{
        process::Stdio,
        time::{Duration, Instant},
    };

    use serde_json::{Value, json};
    use tokio::{
        io::{AsyncBufReadExt, BufReader},
        process::{Child, Command},
        sync::mpsc,
    };

    use super::{PASSWORD, common};

    /// How long any one wait may take before the test calls it broken.
    const PATIENCE: Duration = Duration::from_secs(60);

    /// A `redis-server` that requires [`PASSWORD`], ready to accept connections.
    struct Redis {
        child: Child,
        port: u16,
    }

    async fn start_redis() -> Redis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--requirepass", PASSWORD, "--loglevel", "notice"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run redis-server: {e}\n{}",
                    ferrymcp_test_helpers::redis::HOW_TO_GET_REDIS
                )
            });
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let ready = tokio::time::timeout(PATIENCE, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("Ready to accept connections") {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(
            ready,
            Ok(true),
            "redis-server on port {port} never got ready"
        );
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Redis { child, port }
    }

    impl Redis {
        fn url(&self) -> String {
            format!("redis://:{PASSWORD}@127.0.0.1:{}/0", self.port)
        }
    }

    /// The demo with `args`; every stderr line goes to the receiver.
    fn spawn_demo(args: &[&str]) -> (Child, mpsc::UnboundedReceiver<String>) {
        let mut child = Command::new(common::demo_binary())
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the demo");
        let mut lines = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        (child, rx)
    }

    /// Reads stderr lines (keeping them all in `seen`) until one satisfies `wanted`.
    async fn line_where(
        rx: &mut mpsc::UnboundedReceiver<String>,
        seen: &mut Vec<String>,
        wanted: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, rx.recv()).await {
                Ok(Some(line)) => {
                    seen.push(line.clone());
                    if wanted(&line) {
                        return line;
                    }
                }
                Ok(None) => panic!("the demo exited; it wrote:\n{}", seen.join("\n")),
                Err(_) => panic!("no such line within {PATIENCE:?}:\n{}", seen.join("\n")),
            }
        }
    }

    /// Issue 12 scope 5: `demo worker` says where it runs tasks from without the password.
    #[tokio::test]
    async fn issue12_the_demo_worker_prints_its_queue_without_the_password() {
        let redis = start_redis().await;
        let url = redis.url();
        let (mut worker, mut stderr) = spawn_demo(&["worker", "--tasks-url", &url]);
        let mut seen = Vec::new();
        let line = line_where(&mut stderr, &mut seen, |l| {
            l.contains(" running tasks from ")
        })
        .await;
        assert!(line.contains("redis://:***@127.0.0.1"), "{line}");
        assert!(
            seen.iter().all(|l| !l.contains(PASSWORD)),
            "{}",
            seen.join("\n")
        );
        let _ = worker.kill().await;
    }

    /// The demo over HTTP with a task store nothing answers at: it exits with an error that
    /// names the store without the password, and never says it listens (a supervisor or a
    /// script waiting for that line must not send calls to a server that is about to stop).
    #[tokio::test]
    async fn issue12_a_demo_whose_task_store_cannot_be_reached_fails_before_saying_it_listens() {
        let port = common::free_port();
        let url = format!("redis://:{PASSWORD}@127.0.0.1:{port}/0");
        let (mut demo, mut stderr) = spawn_demo(&["--http", "127.0.0.1:0", "--tasks-url", &url]);
        let exited = tokio::time::timeout(PATIENCE, demo.wait())
            .await
            .expect("the demo exits within the patience")
            .expect("the demo's exit status");
        let mut seen = Vec::new();
        while let Some(line) = stderr.recv().await {
            seen.push(line);
        }
        let shown = seen.join("\n");
        assert!(!exited.success(), "{shown}");
        assert!(
            shown.contains(&format!(
                "cannot use Redis at redis://:***@127.0.0.1:{port}/0"
            )),
            "{shown}"
        );
        assert!(!shown.contains("listening on"), "{shown}");
        assert!(!shown.contains(PASSWORD), "{shown}");
    }

    /// One 2026-07-28 `tasks/get` over HTTP; the JSON-RPC answer.
    async fn tasks_get(url: &str, id: &str) -> Value {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tasks/get",
            "params": {
                "taskId": id,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {
                        "extensions": {ferrymcp::types::TASKS_EXTENSION_ID: {}}
                    },
                    "io.modelcontextprotocol/clientInfo": {"name": "secrets-test", "version": "0"}
                }
            }
        });
        let response = tokio::time::timeout(
            PATIENCE,
            reqwest::Client::new()
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tasks/get")
                .header("mcp-name", id)
                .body(body.to_string())
                .send(),
        )
        .await
        .expect("answered in time")
        .expect("POST");
        let text = response.text().await.expect("the body");
        let json = text
            .lines()
            .find_map(|line| line.strip_prefix("data:"))
            .unwrap_or(&text);
        serde_json::from_str(json.trim()).unwrap_or_else(|_| panic!("not JSON: {text:?}"))
    }

    /// Issue 12 scope 5: with the Redis gone after start, a client's `tasks/get` gets a
    /// masked `-32603` whose id is in the demo's log; neither the client's error nor
    /// anything the demo wrote holds the password, and the client's error names no URL.
    #[tokio::test]
    async fn issue12_a_dead_redis_reaches_the_client_masked_with_an_id_the_log_has() {
        let mut redis = start_redis().await;
        let tasks_url = redis.url();
        let (mut demo, mut stderr) =
            spawn_demo(&["--http", "127.0.0.1:0", "--tasks-url", &tasks_url]);
        let mut seen = Vec::new();
        let listening =
            line_where(&mut stderr, &mut seen, |l| l.starts_with("listening on ")).await;
        let url = listening
            .trim_start_matches("listening on ")
            .trim()
            .to_owned();

        // While Redis lives, an unknown task is just not found.
        let answer = tasks_get(&url, "no-such-task").await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");

        redis.child.kill().await.expect("kill redis-server");
        let answer = tasks_get(&url, "no-such-task").await;
        let error = &answer["error"];
        assert_eq!(error["code"], -32603, "{answer}");
        let shown = answer.to_string();
        assert!(!shown.contains(PASSWORD), "{shown}");
        assert!(!shown.contains("redis"), "no backend URL or name: {shown}");
        assert!(
            !shown.contains(&redis.port.to_string()),
            "no address: {shown}"
        );
        let message = error["message"].as_str().unwrap_or_default();
        let id = message
            .strip_prefix("The task store is unavailable; retry later (id: ")
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or_else(|| panic!("a masked error with an id: {message}"));
        assert!(id.len() >= 8, "{id}");

        let logged = line_where(&mut stderr, &mut seen, |l| l.contains(id)).await;
        assert!(logged.contains("ERROR"), "logged at ERROR: {logged}");
        assert!(
            logged.contains("task store unavailable"),
            "with the details: {logged}"
        );
        assert!(
            seen.iter().all(|l| !l.contains(PASSWORD)),
            "{}",
            seen.join("\n")
        );
        let _ = demo.kill().await;
    }
}
