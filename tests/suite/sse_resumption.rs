//! Resumable answers on 2025-11-25 sessions (issue 15, part 3; SEP-1699), over real HTTP
//! with raw requests: a tool ends its request's SSE stream mid-call
//! (`Context::close_sse_stream`), the stream ends with a priming event carrying the
//! reconnection delay, and a `GET` with `Last-Event-ID` replays what was sent since (a
//! progress notification) and then carries the answer, whether the answer comes after the
//! reconnect or before it. Order is controlled by signals the test sends the tool, never by
//! waiting.

use std::{sync::Arc, time::Duration};

use ferrymcp::{Context, HttpConfig, Server, State, ToolDef};
use ferrymcp_test_helpers::http::LoopbackHttp;
use serde_json::{Value, json};
use tokio::sync::Notify;

const PATIENCE: Duration = Duration::from_secs(10);

/// Lets the tool answer.
#[derive(Clone, Default)]
struct Release(Arc<Notify>);

async fn long_call(cx: Context, State(release): State<Release>) -> &'static str {
    cx.report_progress(1.0, None, Some("before the close".to_owned()))
        .await;
    let closed = cx.close_sse_stream().await;
    assert!(
        closed,
        "the first close of a session request's stream succeeds"
    );
    assert!(
        !cx.close_sse_stream().await,
        "a closed stream cannot close again"
    );
    cx.report_progress(2.0, None, Some("after the close".to_owned()))
        .await;
    release.0.notified().await;
    "done"
}

async fn serve() -> (LoopbackHttp, Release) {
    let release = Release::default();
    let server = Server::new("resumable");
    server.insert_state(release.clone());
    server
        .add_tool(ToolDef::new("long_call", long_call))
        .expect("tool");
    let config = HttpConfig::new().sse_retry(Duration::from_millis(250));
    (LoopbackHttp::serve_with(server, config).await, release)
}

/// One SSE event: its id, retry field and data.
#[derive(Debug, Default, Clone)]
struct Event {
    id: Option<String>,
    retry: Option<u64>,
    data: String,
}

/// Reads SSE events until the stream ends, or until `stop` says so.
async fn events(mut response: reqwest::Response, stop: impl Fn(&Event) -> bool) -> Vec<Event> {
    let mut text = String::new();
    let mut out = Vec::new();
    loop {
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let mut event = Event::default();
            for line in block.lines() {
                if let Some(id) = line.strip_prefix("id:") {
                    event.id = Some(id.trim().to_owned());
                } else if let Some(retry) = line.strip_prefix("retry:") {
                    event.retry = retry.trim().parse().ok();
                } else if let Some(data) = line.strip_prefix("data:") {
                    event.data.push_str(data.trim_start());
                }
            }
            let done = stop(&event);
            out.push(event);
            if done {
                return out;
            }
        }
        let chunk = tokio::time::timeout(PATIENCE, response.chunk())
            .await
            .expect("the stream moves in time")
            .expect("the stream reads");
        match chunk {
            Some(bytes) => text.push_str(&String::from_utf8_lossy(&bytes)),
            None => return out,
        }
    }
}

fn json_of(event: &Event) -> Option<Value> {
    serde_json::from_str(&event.data).ok()
}

fn is_answer(event: &Event, id: u64) -> bool {
    json_of(event).is_some_and(|m| m["id"] == id && m.get("result").is_some())
}

struct Session {
    client: reqwest::Client,
    url: String,
    id: String,
}

impl Session {
    async fn open(url: &str) -> Self {
        let client = reqwest::Client::new();
        let init = client
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}}),
            )
            .send()
            .await
            .expect("initialize");
        let id = init
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned();
        let answered = events(init, |e| is_answer(e, 0)).await;
        assert!(answered.iter().any(|e| is_answer(e, 0)), "{answered:?}");
        let session = Self {
            client,
            url: url.to_owned(),
            id,
        };
        let initialized = session
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(initialized.status(), 202);
        session
    }

    async fn post(&self, body: Value) -> reqwest::Response {
        self.client
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body)
            .send()
            .await
            .expect("post")
    }

    async fn call(&self, id: u64) -> reqwest::Response {
        self.post(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "long_call", "arguments": {}, "_meta": {"progressToken": format!("p{id}")}}}),
        )
        .await
    }

    async fn resume(&self, last_event_id: &str) -> reqwest::Response {
        let response = self
            .client
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .header("last-event-id", last_event_id)
            .send()
            .await
            .expect("get");
        assert_eq!(response.status(), 200);
        response
    }
}

/// The POST stream of a call that closes it: progress 1, then a priming event with the
/// retry and no answer. Returns the id to resume after.
async fn closed_stream(session: &Session, id: u64) -> String {
    let response = session.call(id).await;
    assert_eq!(response.status(), 200);
    let seen = events(response, |_| false).await;
    assert!(
        !seen.iter().any(|e| is_answer(e, id)),
        "no answer before the close: {seen:?}"
    );
    assert!(
        seen.iter()
            .any(|e| json_of(e).is_some_and(|m| m["params"]["progress"] == 1.0)),
        "{seen:?}"
    );
    let last = seen.last().expect("events");
    assert!(
        last.data.is_empty(),
        "a priming event ends the stream: {last:?}"
    );
    assert_eq!(last.retry, Some(250));
    last.id.clone().expect("an event id")
}

#[tokio::test]
async fn sep1699_a_reconnect_before_the_answer_replays_what_was_missed_and_carries_the_answer() {
    let (http, release) = serve().await;
    let session = Session::open(http.url()).await;
    let last = closed_stream(&session, 1).await;

    let resumed = session.resume(&last).await;
    let release_when_replayed = {
        let release = release.clone();
        move |e: &Event| {
            if json_of(e).is_some_and(|m| m["params"]["progress"] == 2.0) {
                release.0.notify_one();
            }
            is_answer(e, 1)
        }
    };
    let seen = events(resumed, release_when_replayed).await;
    let progress_at = seen
        .iter()
        .position(|e| json_of(e).is_some_and(|m| m["params"]["progress"] == 2.0))
        .expect("the progress sent after the close is replayed");
    let answer_at = seen
        .iter()
        .position(|e| is_answer(e, 1))
        .expect("the answer");
    assert!(progress_at < answer_at);
    let answer = json_of(&seen[answer_at]).expect("json");
    assert_eq!(answer["result"]["content"][0]["text"], "done");
    http.shutdown().await;
}

#[tokio::test]
async fn sep1699_an_answer_that_came_before_the_reconnect_is_replayed() {
    let (http, release) = serve().await;
    let session = Session::open(http.url()).await;
    let last = closed_stream(&session, 7).await;
    // The tool may answer now; the reconnect follows at once, before or after it.
    release.0.notify_one();
    let seen = events(session.resume(&last).await, |e| is_answer(e, 7)).await;
    assert!(seen.iter().any(|e| is_answer(e, 7)), "{seen:?}");
    // The session goes on serving.
    let ping = session
        .post(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}))
        .await;
    let seen = events(ping, |e| json_of(e).is_some_and(|m| m["id"] == 8)).await;
    assert!(
        seen.iter()
            .any(|e| json_of(e).is_some_and(|m| m["id"] == 8))
    );
    http.shutdown().await;
}

#[tokio::test]
async fn a_stateless_2026_request_has_no_stream_to_close_and_answers_normally() {
    let server = Server::new("stateless");
    server
        .add_tool(ToolDef::new("try_close", |cx: Context| async move {
            cx.close_sse_stream().await.to_string()
        }))
        .expect("tool");
    let http = LoopbackHttp::serve(server).await;
    let (status, answer) = http
        .post_2026(
            "tools/call",
            json!({"name": "try_close", "arguments": {}}),
            json!({}),
            Some("try_close"),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "false");
    http.shutdown().await;
}
