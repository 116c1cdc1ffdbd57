//! Every program in `examples/` (apart from the demo, the conformance fixture and the load
//! drivers, which have suites of their own) runs as a real process and does what its doc
//! comment says, over Streamable HTTP with a 2026-07-28 client (the Redis workers on the
//! shared test Redis, the auth example against the local authorization server); and the README's first
//! program is `examples/hello.rs`.

mod common;

use std::{process::Stdio, time::Duration};

use common::{example_binary as example, free_port};

use ferrymcp_test_helpers::http::{RawAnswer, post_2026_to};
use serde_json::{Value, json};
use tokio::{io::AsyncReadExt, net::TcpStream, process::Child, time::Instant};

/// A running example, killed when dropped, and its endpoint.
struct Running {
    child: Child,
    url: String,
}

impl Running {
    /// Starts `name` with `args` and returns once its port accepts connections (the
    /// examples print nothing when ready; a process that exits first fails the test).
    async fn start(name: &str, port: u16, args: &[String], envs: &[(&str, &str)]) -> Running {
        let mut child = tokio::process::Command::new(example(name))
            .args(args)
            .envs(envs.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the example starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                let mut stderr = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    let _ = pipe.read_to_string(&mut stderr).await;
                }
                panic!("{name} exited with {status} before listening: {stderr}");
            }
            assert!(
                Instant::now() < deadline,
                "{name} did not listen on {port} within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Running {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }

    async fn on_free_port(name: &str) -> Running {
        let port = free_port();
        Running::start(name, port, &[format!("127.0.0.1:{port}")], &[]).await
    }

    async fn post(&self, method: &str, params: Value, tasks: bool) -> RawAnswer {
        let capabilities = if tasks {
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        } else {
            json!({})
        };
        post_2026_to(&self.url, None, method, params, capabilities).await
    }

    async fn result(&self, method: &str, params: Value, tasks: bool) -> Value {
        let answer = self.post(method, params, tasks).await;
        assert_eq!(answer.status, 200, "{method}: {answer:?}");
        answer.body["result"].clone()
    }

    async fn call(&self, tool: &str, arguments: Value) -> Value {
        self.result(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            false,
        )
        .await
    }

    /// The tools' listing entries by name.
    async fn tools(&self) -> Vec<Value> {
        self.result("tools/list", json!({}), false).await["tools"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The tools' names, in listing order.
    async fn tool_names(&self) -> Vec<String> {
        self.tools()
            .await
            .iter()
            .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
            .collect()
    }

    async fn stderr_after_kill(mut self) -> String {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr).await;
        }
        stderr
    }
}

/// Removes whitespace and `//` comments, to compare programs as rustfmt leaves them with
/// the same programs written compactly.
fn squeezed(code: &str) -> String {
    code.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .map(|line| line.split(" // ").next().unwrap_or(line))
        .collect::<String>()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

#[tokio::test]
async fn the_readme_seed_is_examples_hello_and_it_serves_child_multiply() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let seed = readme
        .split("```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("README's first rust block");
    let hello =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/hello.rs")).unwrap();
    assert_eq!(
        squeezed(seed),
        squeezed(&hello),
        "README's seed and examples/hello.rs differ"
    );
    let user_lines = seed
        .lines()
        .filter(|line| {
            let line = line.trim();
            !line.is_empty()
                && line != "}"
                && line != "#[tokio::main]"
                && !line.starts_with("async fn main")
                && !line.starts_with("use ")
        })
        .count();
    assert!(
        user_lines <= 6,
        "the seed takes {user_lines} lines of user code:\n{seed}"
    );

    // hello listens where the README says.
    let hello = Running::start("hello", 8000, &[], &[]).await;
    let tools = hello.tools().await;
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(tools[0]["name"], "child_multiply");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["a", "b"]));
    let result = hello.call("child_multiply", json!({"a": 8, "b": 9})).await;
    assert_eq!(
        result["structuredContent"],
        json!({"result": 72}),
        "{result}"
    );
}

/// `serve_http` stops cleanly on SIGTERM (what `docker stop` and Kubernetes send), not only on
/// Ctrl-C: the process exits with status 0 instead of dying of the signal.
#[cfg(unix)]
#[tokio::test]
async fn serve_http_stops_cleanly_on_sigterm() {
    let mut running = Running::on_free_port("mount").await;
    let tools = running.tool_names().await;
    assert!(!tools.is_empty(), "{tools:?}");
    let pid = running.child.id().expect("a running process").to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill -TERM {pid}: {sent}");
    let status = tokio::time::timeout(Duration::from_secs(10), running.child.wait())
        .await
        .expect("the server stops within 10 s of SIGTERM")
        .expect("wait for the server");
    assert!(status.success(), "exit status after SIGTERM: {status}");
}

#[tokio::test]
async fn mount_serves_the_child_under_both_namespaces() {
    let mount = Running::on_free_port("mount").await;
    let names = mount.tool_names().await;
    assert_eq!(names, ["users_lookup", "people_lookup"], "{names:?}");
    let found = mount.call("users_lookup", json!({"id": 1})).await;
    assert_eq!(found["structuredContent"]["result"], "grace", "{found}");
    let templates = mount
        .result("resources/templates/list", json!({}), false)
        .await;
    let uris: Vec<&str> = templates["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    assert!(uris.contains(&"users://users/{id}/profile"), "{templates}");
    let read = mount
        .result(
            "resources/read",
            json!({"uri": "users://users/7/profile"}),
            false,
        )
        .await;
    assert_eq!(read["contents"][0]["text"], r#"{"id":7}"#, "{read}");
    let prompt = mount
        .result(
            "prompts/get",
            json!({"name": "people_greet", "arguments": {"name": "Ada"}}),
            false,
        )
        .await;
    assert!(prompt.to_string().contains("greeting for Ada"), "{prompt}");
}

#[tokio::test]
async fn middleware_times_calls_and_refuses_by_name() {
    let running = Running::on_free_port("middleware").await;
    let divided = running.call("math_divide", json!({"a": 1, "b": 4})).await;
    assert_eq!(divided["structuredContent"]["result"], 0.25, "{divided}");
    let by_zero = running.call("math_divide", json!({"a": 1, "b": 0})).await;
    assert_eq!(by_zero["isError"], true, "{by_zero}");
    let refused = running
        .post(
            "tools/call",
            json!({"name": "math_forbidden", "arguments": {}}),
            false,
        )
        .await;
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("math_forbidden is not allowed")),
        "{refused:?}"
    );
    let stderr = running.stderr_after_kill().await;
    assert_eq!(stderr.matches("math_divide took").count(), 2, "{stderr}");
    // Timing, added first, is outermost: it also times the call Policy refuses.
    assert_eq!(stderr.matches("math_forbidden took").count(), 1, "{stderr}");
}

#[tokio::test]
async fn tasks_run_in_the_background_for_a_client_that_asks() {
    let running = Running::on_free_port("tasks").await;
    // `report` only runs as a task (2026-07-28 listings carry no task modes: the call says).
    let refused = running
        .post(
            "tools/call",
            json!({"name": "report", "arguments": {}}),
            false,
        )
        .await;
    assert_eq!(refused.body["error"]["code"], -32021, "{refused:?}");

    squares_inline_and_as_a_task(&running, "slow_square").await;
}

/// Calls `tool` (the tasks example's `slow_square`, here or behind a proxy) inline with 7,
/// then as a task with 9, and waits for the task's 81; returns the task's id.
async fn squares_inline_and_as_a_task(running: &Running, tool: &str) -> String {
    // Without asking: inline.
    let inline = running.call(tool, json!({"n": 7})).await;
    assert_eq!(inline["structuredContent"]["result"], 49, "{inline}");

    // Asking: a task, then its result.
    let created = running
        .result(
            "tools/call",
            json!({"name": tool, "arguments": {"n": 9, "millis": 50}}),
            true,
        )
        .await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("a task id").to_owned();
    let done = until_terminal(&running.url, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["result"], 81, "{done}");
    id
}

/// Polls `tasks/get` at `url` until `id` is neither `working` nor
/// `submitted`; returns the task.
async fn until_terminal(url: &str, id: &str) -> Value {
    let capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = post_2026_to(
            url,
            None,
            "tasks/get",
            json!({"taskId": id}),
            capabilities.clone(),
        )
        .await;
        let task = answer.body["result"].clone();
        if !["working", "submitted"].contains(&task["status"].as_str().unwrap_or_default()) {
            return task;
        }
        assert!(Instant::now() < deadline, "not done within 30 s: {task}");
        // The client's poll interval: the protocol has the client poll.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn redis_workers_runs_tasks_in_a_worker_process_not_the_server() {
    let queue = ferrymcp_test_helpers::redis::RedisServer::shared().queue_url("example-workers");
    let envs = [("MCP_TASKS_URL", queue.as_str())];
    let port = free_port();
    let server = Running::start(
        "redis_workers",
        port,
        &["serve".into(), format!("127.0.0.1:{port}")],
        &envs,
    )
    .await;
    let created = server
        .result(
            "tools/call",
            json!({"name": "square", "arguments": {"n": 12}}),
            true,
        )
        .await;
    let id = created["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned();
    // No worker yet: the server runs nothing itself, the task waits in Redis.
    let waiting = server
        .result("tasks/get", json!({"taskId": id}), true)
        .await;
    assert_eq!(waiting["status"], "working", "{waiting}");

    let worker = tokio::process::Command::new(example("redis_workers"))
        .arg("worker")
        .envs(envs)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the worker starts");
    let worker_pid = worker.id().expect("the worker's pid");
    let done = until_terminal(&server.url, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        text,
        format!("12 squared is 144 (process {worker_pid})"),
        "{done}"
    );
}

#[tokio::test]
async fn proxy_serves_the_remote_tools_under_its_namespace_and_passes_tasks_through() {
    let remote = Running::on_free_port("tasks").await;
    let port = free_port();
    let proxy = Running::start(
        "proxy",
        port,
        &[format!("127.0.0.1:{port}"), remote.url.clone()],
        &[],
    )
    .await;
    let names = proxy.tool_names().await;
    assert_eq!(
        names,
        ["local_hello", "remote_slow_square", "remote_report"],
        "{names:?}"
    );
    let hello = proxy.call("local_hello", json!({"name": "Ada"})).await;
    assert_eq!(
        hello["content"][0]["text"], "hello Ada, from the proxy",
        "{hello}"
    );
    // A task through the hop: the proxy's task id, polled at the proxy, run remotely.
    let id = squares_inline_and_as_a_task(&proxy, "remote_slow_square").await;
    // The remote server knows the task by another id: the proxy's is its own.
    let at_remote = remote.post("tasks/get", json!({"taskId": id}), true).await;
    assert!(at_remote.body["error"].is_object(), "{at_remote:?}");
}

#[tokio::test]
async fn auth_needs_a_token_for_its_url_and_the_scope_a_tool_asks() {
    use ferrymcp_test_helpers::auth_server::{AuthServer, CLIENT_A};
    let auth = AuthServer::shared();
    let port = free_port();
    let running = Running::start(
        "auth",
        port,
        &[format!("127.0.0.1:{port}"), auth.issuer().to_owned()],
        &[],
    )
    .await;
    let url = running.url.clone();
    let post = |token: Option<String>, tool: &'static str| {
        let url = url.clone();
        async move {
            post_2026_to(
                &url,
                token.as_deref(),
                "tools/call",
                json!({"name": tool, "arguments": {}}),
                json!({}),
            )
            .await
        }
    };

    let anonymous = post(None, "whoami").await;
    assert_eq!(anonymous.status, 401, "{anonymous:?}");
    assert!(
        anonymous
            .challenge
            .contains("/.well-known/oauth-protected-resource/mcp"),
        "{anonymous:?}"
    );
    // A token for another audience is refused too.
    let elsewhere = auth
        .token(CLIENT_A, "http://127.0.0.1:1/mcp", "admin")
        .await;
    assert_eq!(post(Some(elsewhere), "whoami").await.status, 401);

    let reader = auth.token(CLIENT_A, &url, "").await;
    let me = post(Some(reader.clone()), "whoami").await;
    assert_eq!(me.status, 200, "{me:?}");
    assert_eq!(me.body["result"]["content"][0]["text"], CLIENT_A, "{me:?}");
    let refused = post(Some(reader), "reset").await;
    assert_eq!(refused.status, 403, "{refused:?}");
    assert!(
        refused.challenge.contains("error=\"insufficient_scope\"")
            && refused.challenge.contains("admin"),
        "{refused:?}"
    );
    let admin = auth.token(CLIENT_A, &url, "admin").await;
    let reset = post(Some(admin), "reset").await;
    assert_eq!(reset.status, 200, "{reset:?}");
    assert_eq!(
        reset.body["result"]["content"][0]["text"], "reset",
        "{reset:?}"
    );
}
