//! Shared by the end-to-end suites: locating and launching the demo binary.

use std::path::PathBuf;

use tokio::io::{AsyncBufReadExt, BufReader};

/// `target/<profile>/examples/demo`, which `cargo test` builds before running tests.
#[allow(dead_code)]
pub fn demo_binary() -> PathBuf {
    example_binary("demo")
}

/// `target/<profile>/examples/<name>`, which `cargo test` builds before running tests.
#[allow(dead_code)]
pub fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lives in target/<profile>/deps");
    let binary = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} is missing: run the suite with `cargo test` (which builds examples) or `cargo build --example {name}` first",
        binary.display()
    );
    binary
}

/// `target/<profile>/ferrymcp-tasks`, the operators' command line, which
/// `cargo test --workspace --all-features` builds (the tasks crate's `cli` feature).
#[allow(dead_code)]
pub fn operator_cli() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let binary = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lives in target/<profile>/deps")
        .join(format!("ferrymcp-tasks{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} is missing: run the suites with `cargo test --workspace --all-features`, or \
         `cargo build -p ferrymcp-tasks --features cli` first",
        binary.display()
    );
    binary
}

/// What one run of the operators' command line printed, and how it exited.
#[allow(dead_code)]
pub struct CliRun {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

#[allow(dead_code)]
impl CliRun {
    /// Stdout as JSON (the run must have succeeded, with `--json`).
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> T {
        assert_eq!(self.code, Some(0), "the command failed: {}", self.stderr);
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not the JSON expected ({e}): {}", self.stdout))
    }
}

/// Runs `ferrymcp-tasks --url <url> <args>` and waits for it.
#[allow(dead_code)]
pub async fn run_operator_cli(url: &str, args: &[&str]) -> CliRun {
    let output = tokio::process::Command::new(operator_cli())
        .arg("--url")
        .arg(url)
        .args(args)
        .env_remove("MCP_ADMIN_TOKEN")
        .kill_on_drop(true)
        .output()
        .await
        .expect("run ferrymcp-tasks");
    CliRun {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The demo serving Streamable HTTP on a free port, and its URL (read from its stderr).
pub struct DemoHttp {
    pub url: String,
    _child: tokio::process::Child,
}

#[allow(dead_code)]
pub async fn spawn_demo_http() -> DemoHttp {
    spawn_demo_http_with(&[], &[]).await
}

/// The demo serving Streamable HTTP on a free port with extra `args` and environment `envs`.
#[allow(dead_code)]
pub async fn spawn_demo_http_with(args: &[&str], envs: &[(&str, &str)]) -> DemoHttp {
    spawn_demo_http_on(0, args, envs).await
}

/// The demo serving Streamable HTTP on `127.0.0.1:<port>` (0: a free port) with extra
/// `args` and `envs` (a given port for a server that must know its own URL before it
/// starts, such as an OAuth audience).
#[allow(dead_code)]
pub async fn spawn_demo_http_on(port: u16, args: &[&str], envs: &[(&str, &str)]) -> DemoHttp {
    let address = format!("127.0.0.1:{port}");
    let mut all = vec!["--http", address.as_str()];
    all.extend_from_slice(args);
    let (child, url) = spawn_demo(&all, envs, |line| {
        line.strip_prefix("listening on ")
            .map(|url| url.trim().to_owned())
    })
    .await;
    DemoHttp { url, _child: child }
}

/// A TCP port that is free on 127.0.0.1 right now.
#[allow(dead_code)]
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

/// A `demo worker` process (killed when dropped).
#[allow(dead_code)]
pub struct DemoWorker {
    pub child: tokio::process::Child,
}

/// Starts `demo worker` with extra `args` and environment `envs`, and returns once it says
/// it runs (connected, subscribed).
#[allow(dead_code)]
pub async fn spawn_demo_worker(args: &[&str], envs: &[(&str, &str)]) -> DemoWorker {
    let mut all = vec!["worker"];
    all.extend_from_slice(args);
    let (child, _) = spawn_demo(&all, envs, |line| {
        (line.starts_with("worker ") && line.contains(" running tasks from ")).then(String::new)
    })
    .await;
    DemoWorker { child }
}

/// Starts `demo worker` with extra `args`, `envs` and `--metrics 127.0.0.1:0`, and returns
/// once it serves its metrics, with their URL.
#[allow(dead_code)]
pub async fn spawn_demo_worker_with_metrics(
    args: &[&str],
    envs: &[(&str, &str)],
) -> (DemoWorker, String) {
    let mut all = vec!["worker", "--metrics", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let (child, url) = spawn_demo(&all, envs, |line| {
        line.strip_prefix("metrics on ")
            .map(|url| url.trim().to_owned())
    })
    .await;
    (DemoWorker { child }, url)
}

/// Starts the demo with `args` and `envs` and reads its stderr until `ready` recognises a
/// line; returns the child and what `ready` took from that line. The rest of stderr goes
/// to the test's output, prefixed with the demo's arguments (shown when the test fails, to
/// tell what the servers saw), so the child never blocks on a full pipe.
async fn spawn_demo(
    args: &[&str],
    envs: &[(&str, &str)],
    ready: impl Fn(&str) -> Option<String>,
) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(demo_binary())
        .args(args)
        .envs(envs.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the demo");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    let taken = loop {
        let line = lines
            .next_line()
            .await
            .expect("read the demo's stderr")
            .unwrap_or_else(|| panic!("the demo ({args:?}) exited before it was ready"));
        if let Some(taken) = ready(&line) {
            break taken;
        }
    };
    let shown = format!("{args:?}");
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("[demo {shown}] {line}");
        }
    });
    (child, taken)
}

/// The demo as a stdio child process, everything it writes recorded.
#[allow(dead_code)]
pub fn demo_stdio() -> ferrymcp_test_helpers::wire::StdioChild {
    let mut command = tokio::process::Command::new(demo_binary());
    command.arg("--stdio");
    ferrymcp_test_helpers::wire::spawn_stdio(&mut command).expect("spawn the demo over stdio")
}

/// The demo over HTTP behind a recording proxy; both live as long as this value. Point the
/// client at `recorder.url`.
#[allow(dead_code)]
pub struct RecordedHttp {
    pub recorder: ferrymcp_test_helpers::wire::HttpRecorder,
    _demo: DemoHttp,
}

#[allow(dead_code)]
pub async fn demo_http_recorded() -> RecordedHttp {
    let demo = spawn_demo_http().await;
    let recorder = ferrymcp_test_helpers::wire::record_http(&demo.url)
        .await
        .expect("start the recording proxy");
    RecordedHttp {
        recorder,
        _demo: demo,
    }
}

/// A 2026-07-28 client of the server at `url` (Streamable HTTP), opted in to tasks.
#[allow(dead_code)]
pub async fn tasks_client(url: &str) -> ferrymcp_test_helpers::client::TestClient {
    ferrymcp_test_helpers::client::connect(
        rmcp::transport::StreamableHttpClientTransport::from_uri(url.to_owned()),
        ferrymcp_test_helpers::client::Lifecycle::Modern,
        true,
    )
    .await
    .unwrap_or_else(|e| panic!("connect to {url}: {e}"))
}

/// Calls tool `name` with `arguments` through an opted-in `client` and returns the id of
/// the task it became (a call answered otherwise fails the test).
#[allow(dead_code)]
pub async fn submit_task(
    client: &ferrymcp_test_helpers::client::TestClient,
    name: &str,
    arguments: serde_json::Value,
) -> String {
    use ferrymcp::types::{CallToolRequestParams, CallToolResponse, JsonObject};
    let arguments: JsonObject = arguments.as_object().cloned().expect("an object");
    let reply = client
        .call_tool_once(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("tools/call {name}: {e}"));
    match reply {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("an opted-in call of `{name}` must become a task, got {other:?}"),
    }
}

/// Polls the task through `client` until it is terminal, answering its input rounds (with
/// `{"ok": "yes"}`) through the same client. Returns the terminal payload.
#[allow(dead_code)]
pub async fn drive_task(
    client: &ferrymcp_test_helpers::client::TestClient,
    id: &str,
) -> ferrymcp::types::TaskPayload {
    use ferrymcp::types::{GetTaskParams, TaskPayload, UpdateTaskParams};
    use serde_json::json;
    const PATIENCE: std::time::Duration = std::time::Duration::from_secs(120);
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let got = client
            .get_task(GetTaskParams::new(id))
            .await
            .unwrap_or_else(|e| panic!("tasks/get {id}: {e}"));
        match got.task.payload {
            TaskPayload::InputRequired { input_requests } => {
                let answers = input_requests
                    .keys()
                    .map(|key| {
                        (
                            key.clone(),
                            json!({"action": "accept", "content": {"ok": "yes"}}),
                        )
                    })
                    .collect();
                client
                    .update_task(UpdateTaskParams::new(id, answers))
                    .await
                    .unwrap_or_else(|e| panic!("tasks/update {id}: {e}"));
            }
            TaskPayload::Working => {}
            terminal => return terminal,
        }
        assert!(
            std::time::Instant::now() < deadline,
            "task {id} not terminal after {PATIENCE:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
