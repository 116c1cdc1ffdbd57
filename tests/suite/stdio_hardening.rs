//! Issue 12, scope 1 ("stdio survives anything"), against the demo as a child process: a
//! line that is not UTF-8, not JSON or over the line limit gets `-32700` and the next request
//! is answered; an unknown notification before or after `initialize` is ignored; end of
//! input drains the requests in flight and the process exits 0.
//!
//! Every wait is bounded by a generous timeout that only proves something ends.

use crate::common;

use std::{process::Stdio, time::Duration};

use ferrymcp_test_helpers::schema::{Spec, assert_valid};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines},
    process::{Child, ChildStdin, ChildStdout},
};

/// How long any single answer or exit may take before the test gives up.
const BOUND: Duration = Duration::from_secs(30);

struct Demo {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Demo {
    fn spawn(args: &[&str]) -> Self {
        let mut child = tokio::process::Command::new(common::demo_binary())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the demo");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Self {
            child,
            stdin,
            stdout,
        }
    }

    async fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).await.expect("write to the demo");
        stdin.flush().await.expect("flush");
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.send_bytes(&line).await;
    }

    /// The next line the demo writes, as JSON.
    async fn answer(&mut self) -> Value {
        let line = tokio::time::timeout(BOUND, self.stdout.next_line())
            .await
            .expect("the demo answered in time")
            .expect("read stdout")
            .expect("the demo closed stdout instead of answering");
        serde_json::from_str(&line).expect("the demo writes JSON lines")
    }

    /// The next `n` answers.
    async fn answers(&mut self, n: usize) -> Vec<Value> {
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(self.answer().await);
        }
        out
    }

    /// Closes stdin; returns what is left on stdout and the exit status.
    async fn hang_up(mut self) -> (Vec<Value>, std::process::ExitStatus) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        loop {
            let line = tokio::time::timeout(BOUND, self.stdout.next_line())
                .await
                .expect("the demo closed stdout in time")
                .expect("read stdout");
            match line {
                Some(line) => rest.push(serde_json::from_str(&line).expect("JSON line")),
                None => break,
            }
        }
        let status = tokio::time::timeout(BOUND, self.child.wait())
            .await
            .expect("the demo exited in time")
            .expect("wait for the demo");
        (rest, status)
    }
}

fn ping(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "stdio-hardening", "version": "1"},
    }})
}

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
}

/// A 2026-07-28 request: no `initialize`, the protocol in `_meta`.
fn modern_call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": name,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "stdio-hardening", "version": "1"},
        },
    }})
}

fn bogus_notification() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/bogus", "params": {"x": 1}})
}

/// The answer with `id`, and the ones without an id (answers to bad lines).
fn split(answers: Vec<Value>, id: i64) -> (Value, Vec<Value>) {
    let (with_id, without): (Vec<Value>, Vec<Value>) =
        answers.into_iter().partition(|a| a["id"] == id);
    assert_eq!(with_id.len(), 1, "one answer to request {id}: {with_id:?}");
    (with_id.into_iter().next().expect("one"), without)
}

fn assert_parse_error(answer: &Value, says: &str) {
    assert_valid(Spec::Mcp, "JSONRPCErrorResponse", answer);
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert!(answer.get("id").is_none(), "no id to echo: {answer}");
    let message = answer["error"]["message"].as_str().expect("a message");
    assert!(message.contains(says), "{message:?} should say {says:?}");
}

fn text_of(result: &Value) -> &str {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {result}"))
}

#[tokio::test]
async fn issue12_stdio_a_line_that_is_not_utf8_gets_32700_and_the_next_request_is_answered() {
    let mut demo = Demo::spawn(&["--stdio"]);
    demo.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\xff\"}\n")
        .await;
    demo.send(ping(1)).await;
    let (pong, rejected) = split(demo.answers(2).await, 1);
    assert_eq!(pong["result"], json!({}));
    assert_parse_error(&rejected[0], "UTF-8");
    // Still the same connection, and a session can start on it.
    demo.send(initialize(2)).await;
    assert_eq!(demo.answer().await["id"], 2);
    let (_, status) = demo.hang_up().await;
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn issue12_stdio_a_line_that_is_not_json_gets_32700_and_the_next_request_is_answered() {
    let mut demo = Demo::spawn(&["--stdio"]);
    demo.send(initialize(1)).await;
    assert_eq!(demo.answer().await["id"], 1);
    demo.send_bytes(b"{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\"\n")
        .await;
    demo.send(call(3, "add", json!({"a": 2, "b": 3}))).await;
    let (sum, rejected) = split(demo.answers(2).await, 3);
    assert_eq!(text_of(&sum), "5");
    assert_parse_error(&rejected[0], "Parse error");
}

#[tokio::test]
async fn issue12_stdio_a_line_over_the_default_16_mib_limit_gets_32700_and_the_next_is_answered() {
    let mut demo = Demo::spawn(&[]);
    demo.send(initialize(1)).await;
    assert_eq!(demo.answer().await["id"], 1);
    // 17 MiB inside a JSON string, so only the length is wrong with it.
    let mut line = br#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":""#.to_vec();
    line.resize(line.len() + 17 * 1024 * 1024, b'x');
    line.extend_from_slice(b"\"}}\n");
    demo.send_bytes(&line).await;
    demo.send(call(3, "add", json!({"a": 20, "b": 22}))).await;
    let (sum, rejected) = split(demo.answers(2).await, 3);
    assert_eq!(text_of(&sum), "42");
    assert_parse_error(&rejected[0], &format!("exceeds {} bytes", 16 * 1024 * 1024));
}

/// Peak resident memory of a process, from `/proc/<pid>/status` (Linux).
#[cfg(target_os = "linux")]
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc status")
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn issue12_stdio_an_endless_line_is_never_buffered_past_the_configured_limit() {
    let mut demo = Demo::spawn(&["--stdio", "--max-line-bytes", "4096"]);
    demo.send(initialize(1)).await;
    assert_eq!(demo.answer().await["id"], 1);
    let pid = demo.child.id().expect("the demo runs");
    let before = peak_rss_kib(pid);
    // 256 MiB without a newline, in 1 MiB writes, then the end of that line.
    let chunk = vec![b'x'; 1024 * 1024];
    for _ in 0..256 {
        demo.send_bytes(&chunk).await;
    }
    demo.send_bytes(b"\n").await;
    demo.send(ping(2)).await;
    let (pong, rejected) = split(demo.answers(2).await, 2);
    assert_eq!(pong["result"], json!({}));
    assert_parse_error(&rejected[0], "exceeds 4096 bytes");
    let grown = peak_rss_kib(pid).saturating_sub(before);
    assert!(
        grown < 64 * 1024,
        "peak memory grew by {grown} KiB reading a 256 MiB line with a 4 KiB limit"
    );
}

#[tokio::test]
async fn issue12_stdio_an_unknown_notification_before_initialize_is_ignored() {
    let mut demo = Demo::spawn(&["--stdio"]);
    demo.send(bogus_notification()).await;
    // A known one before the session, too: it refers to nothing.
    demo.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}),
    )
    .await;
    demo.send(initialize(1)).await;
    let init = demo.answer().await;
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "demo");
    demo.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    demo.send(call(2, "add", json!({"a": 1, "b": 2}))).await;
    assert_eq!(text_of(&demo.answer().await), "3");
    let (rest, status) = demo.hang_up().await;
    assert!(rest.is_empty(), "notifications get no answer: {rest:?}");
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn issue12_stdio_an_unknown_notification_before_a_2026_request_is_ignored() {
    let mut demo = Demo::spawn(&["--stdio"]);
    demo.send(bogus_notification()).await;
    demo.send(modern_call(1, "add", json!({"a": 4, "b": 5})))
        .await;
    let sum = demo.answer().await;
    assert_eq!(sum["id"], 1);
    assert_eq!(text_of(&sum), "9");
    demo.send(bogus_notification()).await;
    demo.send(modern_call(2, "add", json!({"a": 1, "b": 1})))
        .await;
    assert_eq!(text_of(&demo.answer().await), "2");
}

#[tokio::test]
async fn issue12_stdio_an_unknown_notification_after_initialize_is_ignored() {
    let mut demo = Demo::spawn(&["--stdio"]);
    demo.send(initialize(1)).await;
    assert_eq!(demo.answer().await["id"], 1);
    demo.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    demo.send(bogus_notification()).await;
    demo.send(ping(2)).await;
    let pong = demo.answer().await;
    assert_eq!(pong["id"], 2);
    assert_eq!(pong["result"], json!({}));
    let (rest, status) = demo.hang_up().await;
    assert!(rest.is_empty(), "notifications get no answer: {rest:?}");
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn issue12_stdio_eof_delivers_the_answer_in_flight_and_exits_0() {
    let mut demo = Demo::spawn(&["--stdio"]);
    demo.send(initialize(1)).await;
    assert_eq!(demo.answer().await["id"], 1);
    // Runs synchronously (no task opt-in) for half a second; stdin closes at once.
    demo.send(call(2, "sleep_task", json!({"seconds": 0.5})))
        .await;
    let (rest, status) = demo.hang_up().await;
    let (slept, others) = split(rest, 2);
    assert_eq!(text_of(&slept), "slept 0.5");
    // Progress notifications may precede it; nothing else.
    assert!(
        others
            .iter()
            .all(|m| m["method"] == "notifications/progress"),
        "{others:?}"
    );
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn issue12_stdio_eof_delivers_a_2026_answer_in_flight_and_exits_0() {
    let mut demo = Demo::spawn(&["--stdio"]);
    demo.send(modern_call(1, "sleep_task", json!({"seconds": 0.5})))
        .await;
    let (rest, status) = demo.hang_up().await;
    let (slept, _) = split(rest, 1);
    assert_eq!(text_of(&slept), "slept 0.5");
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn issue12_stdio_eof_with_nothing_sent_exits_0() {
    let demo = Demo::spawn(&["--stdio"]);
    let (rest, status) = demo.hang_up().await;
    assert!(rest.is_empty(), "{rest:?}");
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn issue12_stdio_eof_right_after_a_bad_line_still_answers_it_and_exits_0() {
    let mut demo = Demo::spawn(&["--stdio"]);
    demo.send_bytes(b"\xff\xfe\n").await;
    let (rest, status) = demo.hang_up().await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_parse_error(&rest[0], "UTF-8");
    assert!(status.success(), "{status}");
}

/// In process, on a paused clock (the duplex pipe does no real I/O): a request still running
/// when input ends is abandoned after the drain grace, and serving returns `Ok`.
#[tokio::test(start_paused = true)]
async fn issue12_stdio_eof_abandons_a_request_running_past_the_drain_grace() {
    use ferrymcp::{Server, StdioConfig};
    use tokio::io::AsyncReadExt as _;

    let server = Server::new("s");
    server
        .tool("forever", std::future::pending::<()>)
        .expect("register");
    let (client, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    let config = StdioConfig::new().drain_grace(Duration::from_secs(2));
    let serving = tokio::spawn(server.serve_io_with(read, write, config));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut answers = BufReader::new(client_read);
    for message in [initialize(1), call(2, "forever", json!({}))] {
        client_write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .expect("write");
    }
    let mut init = String::new();
    answers.read_line(&mut init).await.expect("read");
    assert!(init.contains("\"id\":1"), "{init}");
    client_write.shutdown().await.expect("end of input");
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("serving ended after the grace")
        .expect("the serving task")
        .expect("end of input is a clean stop");
    let mut rest = String::new();
    answers.read_to_string(&mut rest).await.expect("read");
    assert!(
        !rest.contains("\"id\":2"),
        "the abandoned call got no answer: {rest}"
    );
}

/// The answers up to and including the one with `id`, skipping progress notifications.
async fn answer_to(demo: &mut Demo, id: i64) -> Value {
    loop {
        let answer = demo.answer().await;
        if answer["method"] == "notifications/progress" {
            continue;
        }
        assert_eq!(answer["id"], id, "answers come in order here: {answer}");
        return answer;
    }
}

/// rmcp's serve loop keys requests by id, so a second request under an id still in flight
/// would take the first one's place and one of the two answers would be lost. The second
/// is refused instead, the first goes on, and an id is free again once it is answered.
#[tokio::test]
async fn issue12_stdio_a_request_reusing_an_id_in_flight_is_refused_and_the_first_goes_on() {
    for modern in [false, true] {
        let mut demo = Demo::spawn(&["--stdio"]);
        let request = |id, name, arguments| {
            if modern {
                modern_call(id, name, arguments)
            } else {
                call(id, name, arguments)
            }
        };
        if !modern {
            demo.send(initialize(1)).await;
            assert_eq!(demo.answer().await["id"], 1);
        }
        demo.send(request(2, "sleep_task", json!({"seconds": 60})))
            .await;
        demo.send(request(2, "add", json!({"a": 1, "b": 2}))).await;
        let refused = answer_to(&mut demo, 2).await;
        assert_valid(Spec::Mcp, "JSONRPCErrorResponse", &refused);
        assert_eq!(refused["error"]["code"], -32600, "{refused}");
        let message = refused["error"]["message"].as_str().expect("a message");
        assert!(message.contains("already in use"), "{message}");

        // The first is still running: another call overtakes it.
        demo.send(request(3, "add", json!({"a": 2, "b": 2}))).await;
        assert_eq!(text_of(&answer_to(&mut demo, 3).await), "4");

        // An id is free again once its request is answered.
        demo.send(request(3, "add", json!({"a": 2, "b": 3}))).await;
        assert_eq!(text_of(&answer_to(&mut demo, 3).await), "5");

        // The first, cancelled, gets no answer.
        demo.send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 2, "reason": "test"}}),
        )
        .await;
        let (rest, status) = demo.hang_up().await;
        assert!(
            rest.iter().all(|m| m.get("id").is_none()),
            "nothing else is answered: {rest:?}"
        );
        assert!(status.success(), "{status}");
    }
}

/// C43 over stdio: a 2026-07-28 `tasks/*` request without the tasks extension declared gets
/// `-32021` worded as the tasks extension words it, with the capability it needs; and C06
/// for a tool that only runs as a task.
#[tokio::test]
async fn c06_c43_stdio_tasks_requests_without_the_extension_are_32021_in_our_words() {
    let mut demo = Demo::spawn(&["--stdio"]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-hardening", "version": "1"},
    });
    let requests = [
        ("tasks/get", json!({"taskId": "t"})),
        ("tasks/update", json!({"taskId": "t", "inputResponses": {}})),
        ("tasks/cancel", json!({"taskId": "t"})),
    ];
    for (id, (method, mut params)) in (1..).zip(requests) {
        params["_meta"] = meta.clone();
        demo.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let answer = demo.answer().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32021, "{method}: {answer}");
        assert_eq!(
            answer["error"]["message"],
            "This request targets the tasks extension (io.modelcontextprotocol/tasks); \
             the client did not declare it for this request.",
            "{method}: {answer}"
        );
        assert!(
            answer["error"]["data"]["requiredCapabilities"]["extensions"]
                .get("io.modelcontextprotocol/tasks")
                .is_some(),
            "{method}: {answer}"
        );
    }
    demo.send(modern_call(9, "required_task", json!({"value": 1})))
        .await;
    let refused = demo.answer().await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "Tool 'required_task' requires the tasks extension (io.modelcontextprotocol/tasks); \
         the client did not declare it for this request.",
        "{refused}"
    );
}

/// A 2025-11-25 session asking for a method 2026-07-28 added gets `-32601`, as for any method
/// it does not have, not `-32602` for params it would not read.
#[tokio::test]
async fn stdio_a_2025_session_asking_for_a_2026_method_gets_32601() {
    let mut demo = Demo::spawn(&["--stdio"]);
    demo.send(initialize(1)).await;
    assert_eq!(demo.answer().await["id"], 1);
    demo.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    for (id, method) in [(2, "server/discover"), (3, "subscriptions/listen")] {
        demo.send(json!({"jsonrpc": "2.0", "id": id, "method": method}))
            .await;
        let answer = demo.answer().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
    }
    demo.send(ping(4)).await;
    assert_eq!(demo.answer().await["id"], 4);
}
