//! Every program in `examples/` (apart from the demo, the conformance fixture and the load
//! drivers, which have suites of their own) runs as a real process and does what its doc
//! comment says, over Streamable HTTP with a 2026-07-28 client; and the README's first
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

#[tokio::test]
async fn mount_serves_the_child_under_both_namespaces() {
    let mount = Running::on_free_port("mount").await;
    let names: Vec<Value> = mount
        .tools()
        .await
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(
        names,
        vec![json!("users_lookup"), json!("people_lookup")],
        "{names:?}"
    );
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

    // Without asking: inline.
    let inline = running.call("slow_square", json!({"n": 7})).await;
    assert_eq!(inline["structuredContent"]["result"], 49, "{inline}");

    // Asking: a task, then its result.
    let created = running
        .result(
            "tools/call",
            json!({"name": "slow_square", "arguments": {"n": 9, "millis": 50}}),
            true,
        )
        .await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("a task id").to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    let done = loop {
        let task = running
            .result("tasks/get", json!({"taskId": id}), true)
            .await;
        if task["status"] == "completed" {
            break task;
        }
        assert!(
            ["working", "submitted"].contains(&task["status"].as_str().unwrap_or_default()),
            "{task}"
        );
        assert!(Instant::now() < deadline, "not done within 20 s: {task}");
        // The client's poll interval: the protocol has the client poll.
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(done["result"]["structuredContent"]["result"], 81, "{done}");
}
