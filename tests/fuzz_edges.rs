//! Fuzzing the edges (issue 12): the stdio message decoder and the HTTP body path take
//! seeded hostile input from `ferrymcp_test_helpers::fuzz` — not UTF-8, not JSON, the wrong types,
//! deep nesting, huge values, unknown methods and notifications, before and after the
//! handshake — and after every input a probe call must still be answered correctly. At the
//! end every input that was a request must have been answered, and nothing may have
//! panicked.
//!
//! Each target runs for `FERRYMCP_FUZZ_SECONDS` (default 3; `.ci/run` runs 60) from the seed
//! `FERRYMCP_FUZZ_SEED` (default: from the clock, printed, so a failure can be replayed).

use std::{
    collections::HashMap,
    sync::{
        Once,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use ferrymcp::{
    Args, HttpConfig, HttpServer, PromptDef, ResourceDef, Server, StdioConfig, ToolDef,
    tasks::{TasksConfig, TasksExtension},
};
use ferrymcp_test_helpers::fuzz::{FuzzInput, MessageFuzzer, PROBE_ID_PREFIX};
use rand::{RngExt as _, SeedableRng as _, rngs::StdRng};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// How long a request may take to be answered before the harness calls it lost.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// The stdio server's drain grace: after the client hangs up, requests it never gets an
/// answer to (a cancelled one, say) are abandoned after this, and the server stops.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Counts every panic in this process (the servers run in it), keeping the default report.
fn count_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

fn budget() -> Duration {
    let seconds = std::env::var("FERRYMCP_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .unwrap_or(3.0);
    Duration::from_secs_f64(seconds.max(0.1))
}

fn seed(target: &str) -> u64 {
    let seed = std::env::var("FERRYMCP_FUZZ_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("fuzz {target}: seed {seed} (replay with FERRYMCP_FUZZ_SEED={seed})");
    seed
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Text {
    text: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Seconds {
    seconds: f64,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct UserId {
    id: u32,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Name {
    name: String,
}

/// A server with something behind every method the fuzzer calls: tools (one of them a
/// task), a resource, a template, a prompt and the tasks extension.
fn fuzz_server() -> Server {
    let server = Server::new("fuzz");
    server
        .add_tool(ToolDef::new(
            "add",
            |Args(Pair { a, b }): Args<Pair>| async move { a.wrapping_add(b) },
        ))
        .expect("add");
    server
        .add_tool(ToolDef::new(
            "echo",
            |Args(Text { text }): Args<Text>| async move { text },
        ))
        .expect("echo");
    server
        .add_tool(
            ToolDef::new(
                "sleep",
                |Args(Seconds { seconds }): Args<Seconds>| async move {
                    // Whatever the fuzzer asks, the harness's answers must come quickly.
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    seconds.is_finite()
                },
            )
            .task(true),
        )
        .expect("sleep");
    server
        .add_resource(ResourceDef::new("demo://readme", || async { "readme" }))
        .expect("resource");
    server
        .add_resource(ResourceDef::new(
            "users://{id}/profile",
            |Args(UserId { id }): Args<UserId>| async move { format!("user {id}") },
        ))
        .expect("template");
    server
        .add_prompt(PromptDef::new(
            "greet",
            |Args(Name { name }): Args<Name>| async move { format!("Greet {name}") },
        ))
        .expect("prompt");
    server
        .add_extension(TasksExtension::with_config(TasksConfig::default()))
        .expect("tasks");
    server
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "fuzz-probe", "version": "1"},
    })
}

/// A `tools/call add(2, 3)`, with the 2026-07-28 `_meta` unless `legacy`.
fn probe(n: usize, legacy: bool) -> Value {
    let mut params = json!({"name": "add", "arguments": {"a": 2, "b": 3}});
    if !legacy {
        params["_meta"] = meta();
    }
    json!({"jsonrpc": "2.0", "id": format!("{PROBE_ID_PREFIX}{n}"), "method": "tools/call", "params": params})
}

fn probe_answered_right(answer: &Value) -> bool {
    answer["result"]["structuredContent"]["result"] == json!(5)
}

/// Requests still waiting for their answer, by id (ids may repeat after mutation).
#[derive(Default)]
struct Outstanding {
    waiting: HashMap<String, Vec<usize>>,
    inputs: Vec<FuzzInput>,
}

impl Outstanding {
    fn expect(&mut self, input: FuzzInput) {
        let index = self.inputs.len();
        if let Some(id) = &input.answer_id {
            self.waiting.entry(id.to_string()).or_default().push(index);
        }
        if let Some(cancelled) = &input.cancels {
            // A cancelled request may legitimately go unanswered.
            self.waiting.remove(&cancelled.to_string());
        }
        self.inputs.push(input);
    }

    fn answered(&mut self, id: &Value) {
        let key = id.to_string();
        if let Some(indexes) = self.waiting.get_mut(&key) {
            indexes.pop();
            if indexes.is_empty() {
                self.waiting.remove(&key);
            }
        }
    }

    fn report(&self, seed: u64) -> String {
        let mut lines = vec![format!(
            "{} requests were never answered (seed {seed}):",
            self.waiting.values().map(Vec::len).sum::<usize>()
        )];
        for indexes in self.waiting.values().take(10) {
            for &index in indexes {
                lines.push(format!("  #{index}: {}", self.inputs[index].describe(300)));
            }
        }
        lines.join("\n")
    }
}

/// One stdio session over a pipe pair: the real line transport and rmcp's serve loop.
async fn fuzz_stdio(legacy: bool) {
    let seed = seed(if legacy {
        "stdio 2025-11-25"
    } else {
        "stdio 2026-07-28"
    });
    let (client, server_end) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_end);
    let serving = tokio::spawn(fuzz_server().serve_io_with(
        read,
        write,
        StdioConfig::new().drain_grace(DRAIN_GRACE),
    ));
    let (client_read, mut client_write) = tokio::io::split(client);

    // Every answer's id, in order, from a reader task.
    let (answers_tx, mut answers) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(client_read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let answer: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                panic!("the server wrote a line that is not JSON ({e}): {line}")
            });
            if answers_tx.send(answer).is_err() {
                break;
            }
        }
    });

    let send = async |out: &mut tokio::io::WriteHalf<tokio::io::DuplexStream>, bytes: &[u8]| {
        out.write_all(bytes).await.expect("write to the server");
        out.write_all(b"\n").await.expect("write to the server");
        out.flush().await.expect("flush");
    };
    let mut fuzzer = MessageFuzzer::new(seed);
    if legacy {
        let initialize = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"}}});
        send(&mut client_write, initialize.to_string().as_bytes()).await;
        let answer = answers.recv().await.expect("initialize answered");
        assert!(answer["result"].is_object(), "initialize: {answer}");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        send(&mut client_write, initialized.to_string().as_bytes()).await;
        fuzzer = fuzzer.legacy();
    }

    let mut outstanding = Outstanding::default();
    let deadline = Instant::now() + budget();
    let mut count = 0usize;
    while Instant::now() < deadline {
        let input = fuzzer.next_input();
        send(&mut client_write, &input.bytes).await;
        let shown = input.describe(300);
        outstanding.expect(input);
        let probe_id = json!(format!("{PROBE_ID_PREFIX}{count}"));
        send(
            &mut client_write,
            probe(count, legacy).to_string().as_bytes(),
        )
        .await;
        loop {
            let answer = tokio::time::timeout(ANSWER_WITHIN, answers.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!("seed {seed}: no answer to the probe after input #{count}: {shown}")
                })
                .unwrap_or_else(|| {
                    panic!("seed {seed}: the server closed the connection after input #{count}: {shown}")
                });
            if answer["id"] == probe_id {
                assert!(
                    probe_answered_right(&answer),
                    "seed {seed}: the probe after input #{count} ({shown}) got {answer}"
                );
                break;
            }
            if let Some(id) = answer.get("id") {
                outstanding.answered(id);
            }
        }
        count += 1;
    }
    // The last requests may still be running.
    let settle = Instant::now() + ANSWER_WITHIN;
    while !outstanding.waiting.is_empty() && Instant::now() < settle {
        match tokio::time::timeout_at(settle.into(), answers.recv()).await {
            Ok(Some(answer)) => {
                if let Some(id) = answer.get("id") {
                    outstanding.answered(id);
                }
            }
            _ => break,
        }
    }
    assert!(
        outstanding.waiting.is_empty(),
        "{}",
        outstanding.report(seed)
    );
    eprintln!("fuzz stdio: {count} inputs, every request answered, no panic");

    // End of input, as a client closing its stdin.
    client_write.shutdown().await.expect("close the pipe");
    drop(client_write);
    let outcome = tokio::time::timeout(DRAIN_GRACE + ANSWER_WITHIN, serving)
        .await
        .expect("the server stops within its drain grace when the client hangs up")
        .expect("the server task did not panic");
    assert!(outcome.is_ok(), "a hang-up is a clean end: {outcome:?}");
    reader.await.expect("the reader");
}

/// Headers a client may send with a fuzzed body: mostly the right ones, sometimes wrong,
/// missing or not ASCII.
fn fuzzed_headers(rng: &mut StdRng, input: &FuzzInput) -> reqwest::header::HeaderMap {
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
    let mut headers = HeaderMap::new();
    let mut set = |name: &'static str, value: &[u8]| {
        if let Ok(value) = HeaderValue::from_bytes(value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    };
    let garbage: &[u8] = b"\xff\xfe garbage";
    let pick = |rng: &mut StdRng, right: &[u8]| -> Option<Vec<u8>> {
        match rng.random_range(0..20u32) {
            0 => None,
            1 => Some(garbage.to_vec()),
            2 => Some(b"tools/list".to_vec()),
            _ => Some(right.to_vec()),
        }
    };
    if let Some(value) = pick(rng, b"application/json") {
        set("content-type", &value);
    }
    if let Some(value) = pick(rng, b"application/json, text/event-stream") {
        set("accept", &value);
    }
    if let Some(value) = pick(rng, b"2026-07-28") {
        set("mcp-protocol-version", &value);
    }
    if let Some(value) = pick(rng, input.method.as_bytes()) {
        set("mcp-method", &value);
    }
    if let Some(name) = &input.name
        && let Some(value) = pick(rng, name.as_bytes())
    {
        set("mcp-name", &value);
    }
    headers
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
) -> Result<(reqwest::StatusCode, reqwest::header::HeaderMap, Vec<u8>), String> {
    let response = tokio::time::timeout(
        ANSWER_WITHIN,
        client.post(url).headers(headers).body(body).send(),
    )
    .await
    .map_err(|_| "no response".to_owned())?
    .map_err(|e| format!("the request failed: {e}"))?;
    let status = response.status();
    let headers = response.headers().clone();
    let body = tokio::time::timeout(ANSWER_WITHIN, response.bytes())
        .await
        .map_err(|_| "no response body".to_owned())?
        .map_err(|e| format!("the body failed: {e}"))?;
    Ok((status, headers, body.to_vec()))
}

async fn fuzz_http() {
    let seed = seed("http");
    let http = HttpServer::bind(fuzz_server(), "127.0.0.1:0", HttpConfig::new())
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", http.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(http.run_until(async {
        stopped.await.ok();
    }));
    let client = reqwest::Client::new();
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    let mut fuzzer = MessageFuzzer::new(seed);
    let probe_headers = {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("content-type", "application/json".parse().expect("header"));
        h.insert(
            "accept",
            "application/json, text/event-stream"
                .parse()
                .expect("header"),
        );
        h.insert(
            "mcp-protocol-version",
            "2026-07-28".parse().expect("header"),
        );
        h.insert("mcp-method", "tools/call".parse().expect("header"));
        h.insert("mcp-name", "add".parse().expect("header"));
        h
    };

    let deadline = Instant::now() + budget();
    let mut count = 0usize;
    let mut statuses: HashMap<u16, usize> = HashMap::new();
    while Instant::now() < deadline {
        let input = fuzzer.next_input();
        let shown = input.describe(300);
        let headers = fuzzed_headers(&mut rng, &input);
        let (status, response_headers, body) =
            post(&client, &url, headers.clone(), input.bytes.clone())
                .await
                .unwrap_or_else(|e| {
                    panic!("seed {seed}: input #{count} ({shown}, headers {headers:?}): {e}")
                });
        *statuses.entry(status.as_u16()).or_default() += 1;
        assert!(
            !status.is_server_error(),
            "seed {seed}: input #{count} ({shown}, headers {headers:?}) got {status}: {}",
            String::from_utf8_lossy(&body)
        );
        let is_json = response_headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if is_json && !body.is_empty() {
            let answer: Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
                panic!(
                    "seed {seed}: input #{count} ({shown}): a JSON answer that does not parse ({e})"
                )
            });
            if status.is_success()
                && let Some(id) = &input.answer_id
            {
                assert_eq!(
                    &answer["id"], id,
                    "seed {seed}: input #{count} ({shown}) was answered for another id: {answer}"
                );
            }
            if status.is_client_error() {
                assert!(
                    answer["error"]["code"].is_i64(),
                    "seed {seed}: input #{count} ({shown}) got {status} without a JSON-RPC error: {answer}"
                );
            }
        }
        let (status, _, body) = post(
            &client,
            &url,
            probe_headers.clone(),
            probe(count, false).to_string().into_bytes(),
        )
        .await
        .unwrap_or_else(|e| panic!("seed {seed}: the probe after input #{count} ({shown}): {e}"));
        let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        assert!(
            status.is_success() && probe_answered_right(&answer),
            "seed {seed}: the probe after input #{count} ({shown}) got {status}: {answer}"
        );
        count += 1;
    }
    let mut statuses: Vec<_> = statuses.into_iter().collect();
    statuses.sort();
    eprintln!("fuzz http: {count} bodies, statuses {statuses:?}, every probe answered, no panic");
    stop.send(()).ok();
    serving
        .await
        .expect("the server task did not panic")
        .expect("a clean stop");
}

/// The three targets at once, in one test so that the panic count is theirs alone: the
/// stdio decoder in both eras and the HTTP body path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzzed_input_never_panics_and_every_request_is_answered() {
    count_panics();
    tokio::join!(fuzz_stdio(false), fuzz_stdio(true), fuzz_http());
    assert_eq!(
        PANICS.load(Ordering::SeqCst),
        0,
        "a server task panicked (see the report above; each target printed its seed)"
    );
}
