//! A seeded generator of hostile MCP messages, for fuzzing a server's decoders on the stable
//! toolchain.
//!
//! [`MessageFuzzer`] starts from well-formed requests and notifications of both protocol
//! eras (tools, resources, prompts, tasks, discovery, cancellation, unknown methods,
//! responses, batches) and breaks them: values of the wrong type, missing and extra keys,
//! deep nesting, huge numbers and strings, then bytes flipped, cut, inserted (including
//! bytes that are not UTF-8) or replaced by noise. Each [`FuzzInput`] says which `id`
//! must get an answer, judged from its final bytes exactly as a JSON-RPC server must judge
//! them: a JSON object with a string `method` and a string or integer `id` is a request,
//! whatever else is wrong with it.
//!
//! The same seed gives the same sequence, so a failure is reproduced by its seed and
//! index. Lines never contain `\n`, so each input is one line on a stdio transport and one
//! body over HTTP.
//!
//! ```
//! use ferrymcp_test_helpers::fuzz::MessageFuzzer;
//!
//! let mut fuzzer = MessageFuzzer::new(7);
//! for _ in 0..100 {
//!     let input = fuzzer.next_input();
//!     assert!(!input.bytes.contains(&b'\n'));
//!     if let Some(id) = &input.answer_id {
//!         assert!(id.is_string() || id.is_i64() || id.is_u64());
//!     }
//! }
//! ```

use rand::{RngExt as _, SeedableRng as _, rngs::StdRng, seq::IndexedRandom as _};
use serde_json::{Map, Value, json};

/// Ids of probe requests a harness sends between fuzzed inputs start with this; the fuzzer
/// never makes one, so probe answers cannot be confused with answers to fuzzed input.
pub const PROBE_ID_PREFIX: &str = "probe-";

/// The protocol version the 2026-07-28 templates carry.
const MODERN: &str = "2026-07-28";

/// One generated input: the bytes to send and what a correct server does with them.
///
/// ```
/// let input = ferrymcp_test_helpers::fuzz::MessageFuzzer::new(1).next_input();
/// let _line: &[u8] = &input.bytes;
/// ```
#[derive(Debug, Clone)]
pub struct FuzzInput {
    /// The line (stdio) or body (HTTP), without a trailing newline.
    pub bytes: Vec<u8>,
    /// The `id` that must be answered, when the bytes are a request.
    pub answer_id: Option<Value>,
    /// A request id this input cancels (`notifications/cancelled`): its answer may never come.
    pub cancels: Option<Value>,
    /// The method the unbroken template had, for the `Mcp-Method` header.
    pub method: String,
    /// The tool, resource, prompt or task the template named, for the `Mcp-Name` header.
    pub name: Option<String>,
}

impl FuzzInput {
    /// The bytes as text for a failure message: valid UTF-8 as is, anything else escaped,
    /// and at most `limit` characters.
    ///
    /// ```
    /// let input = ferrymcp_test_helpers::fuzz::MessageFuzzer::new(3).next_input();
    /// assert!(input.describe(80).chars().count() <= 100);
    /// ```
    pub fn describe(&self, limit: usize) -> String {
        let text = match std::str::from_utf8(&self.bytes) {
            Ok(text) => text.to_owned(),
            Err(_) => self.bytes.escape_ascii().to_string(),
        };
        let mut shown: String = text.chars().take(limit).collect();
        if text.chars().count() > limit {
            shown.push_str(&format!("… ({} bytes)", self.bytes.len()));
        }
        shown
    }
}

/// The id a JSON-RPC server must answer for `bytes`, if they are a request: valid UTF-8
/// (a leading byte-order mark and trailing `\r` aside) holding a JSON object with a string
/// `method` and a string or integer `id`.
///
/// ```
/// use ferrymcp_test_helpers::fuzz::answer_id;
/// assert_eq!(answer_id(br#"{"id":3,"method":"ping"}"#), Some(serde_json::json!(3)));
/// assert_eq!(answer_id(br#"{"method":"notifications/initialized"}"#), None);
/// assert_eq!(answer_id(br#"{"id":1.5,"method":"ping"}"#), None);
/// assert_eq!(answer_id(b"\xff"), None);
/// ```
pub fn answer_id(bytes: &[u8]) -> Option<Value> {
    let message = parse_object(bytes)?;
    message.get("method")?.as_str()?;
    let id = message.get("id")?;
    (id.is_string() || id.is_i64() || id.is_u64()).then(|| id.clone())
}

/// The request id a `notifications/cancelled` in `bytes` names.
fn cancelled_id(bytes: &[u8]) -> Option<Value> {
    let message = parse_object(bytes)?;
    if message.get("method")?.as_str()? != "notifications/cancelled" {
        return None;
    }
    message.get("params")?.get("requestId").cloned()
}

fn parse_object(bytes: &[u8]) -> Option<Map<String, Value>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let text = text.trim_start_matches('\u{feff}').trim_end_matches('\r');
    match serde_json::from_str::<Value>(text).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// A deterministic source of hostile MCP messages.
///
/// ```
/// use ferrymcp_test_helpers::fuzz::MessageFuzzer;
/// let a: Vec<_> = (0..20).map({ let mut f = MessageFuzzer::new(9); move |_| f.next_input().bytes }).collect();
/// let b: Vec<_> = (0..20).map({ let mut f = MessageFuzzer::new(9); move |_| f.next_input().bytes }).collect();
/// assert_eq!(a, b);
/// ```
#[derive(Debug)]
pub struct MessageFuzzer {
    rng: StdRng,
    next_id: u64,
    tools: Vec<String>,
    with_meta: bool,
}

impl MessageFuzzer {
    /// A fuzzer whose sequence is fixed by `seed`, speaking 2026-07-28 (every request carries
    /// its `_meta`) and calling the tools `add`, `echo` and `sleep`.
    ///
    /// ```
    /// let _ = ferrymcp_test_helpers::fuzz::MessageFuzzer::new(42);
    /// ```
    pub fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            next_id: 1,
            tools: vec!["add".into(), "echo".into(), "sleep".into()],
            with_meta: true,
        }
    }

    /// Calls these tools instead of the defaults.
    ///
    /// ```
    /// let _ = ferrymcp_test_helpers::fuzz::MessageFuzzer::new(1).tools(["child_multiply", "add"]);
    /// ```
    pub fn tools<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tools: I) -> Self {
        self.tools = tools.into_iter().map(Into::into).collect();
        if self.tools.is_empty() {
            self.tools.push("add".into());
        }
        self
    }

    /// Leaves the 2026-07-28 `_meta` out of requests, for a 2025-11-25 session that has
    /// already sent `initialize`.
    ///
    /// ```
    /// let _ = ferrymcp_test_helpers::fuzz::MessageFuzzer::new(1).legacy();
    /// ```
    pub fn legacy(mut self) -> Self {
        self.with_meta = false;
        self
    }

    /// The next input.
    ///
    /// ```
    /// let mut fuzzer = ferrymcp_test_helpers::fuzz::MessageFuzzer::new(5);
    /// let first = fuzzer.next_input();
    /// assert!(!first.method.is_empty());
    /// ```
    pub fn next_input(&mut self) -> FuzzInput {
        let (mut message, method, name) = self.template();
        // A quarter of the inputs stay well-formed, so deep paths are reached too.
        let mutations = *[0usize, 1, 1, 2, 3].choose(&mut self.rng).unwrap_or(&1);
        for _ in 0..mutations {
            self.mutate_value(&mut message, 0);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap_or_default();
        if self.rng.random_ratio(1, 3) {
            self.mutate_bytes(&mut bytes);
        }
        for byte in &mut bytes {
            if *byte == b'\n' {
                *byte = b' ';
            }
        }
        FuzzInput {
            answer_id: answer_id(&bytes),
            cancels: cancelled_id(&bytes),
            bytes,
            method,
            name,
        }
    }

    fn fresh_id(&mut self) -> Value {
        self.next_id += 1;
        if self.rng.random_bool(0.5) {
            json!(1_000_000 + self.next_id)
        } else {
            json!(format!("f-{}", self.next_id))
        }
    }

    fn meta(&mut self, tasks: bool) -> Value {
        let mut capabilities = json!({});
        if tasks {
            capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
        }
        json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "fuzzer", "version": "1"},
        })
    }

    fn request(&mut self, method: &str, mut params: Value, tasks: bool) -> Value {
        if self.with_meta
            && let Some(object) = params.as_object_mut()
        {
            object.insert("_meta".into(), self.meta(tasks));
        }
        json!({"jsonrpc": "2.0", "id": self.fresh_id(), "method": method, "params": params})
    }

    fn notification(method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "method": method, "params": params})
    }

    /// A well-formed message, its method and the name it targets.
    fn template(&mut self) -> (Value, String, Option<String>) {
        let tool = self
            .tools
            .choose(&mut self.rng)
            .cloned()
            .unwrap_or_default();
        let number = |rng: &mut StdRng| json!(rng.random_range(-1000i64..1000));
        let kind = self.rng.random_range(0..20u32);
        let (message, method, name) = match kind {
            0 => (self.request("ping", json!({}), false), "ping", None),
            1 => (self.request("tools/list", json!({}), false), "tools/list", None),
            2..=5 => {
                let arguments = json!({
                    "a": number(&mut self.rng), "b": number(&mut self.rng),
                    "text": "héllo", "seconds": 0,
                });
                let tasks = self.rng.random_bool(0.3);
                let params = json!({"name": tool, "arguments": arguments});
                (
                    self.request("tools/call", params, tasks),
                    "tools/call",
                    Some(tool),
                )
            }
            6 => (
                self.request("resources/list", json!({}), false),
                "resources/list",
                None,
            ),
            7 => {
                let uri = ["demo://readme", "users://7/profile", "nope://x"]
                    .choose(&mut self.rng)
                    .copied()
                    .unwrap_or("demo://readme");
                (
                    self.request("resources/read", json!({"uri": uri}), false),
                    "resources/read",
                    Some(uri.to_owned()),
                )
            }
            8 => (
                self.request(
                    "prompts/get",
                    json!({"name": "greet", "arguments": {"name": "Ada"}}),
                    false,
                ),
                "prompts/get",
                Some("greet".to_owned()),
            ),
            9 => {
                let method = ["tasks/get", "tasks/cancel", "tasks/update"]
                    .choose(&mut self.rng)
                    .copied()
                    .unwrap_or("tasks/get");
                let task = "3jFcLZcM0hUVKMv5hogDiqGhMeoXd7Vo9ZshTqTJZn8";
                (
                    self.request(method, json!({"taskId": task}), true),
                    method,
                    Some(task.to_owned()),
                )
            }
            10 => (
                json!({"jsonrpc": "2.0", "id": self.fresh_id(), "method": "server/discover", "params": {}}),
                "server/discover",
                None,
            ),
            11 => (
                self.request("logging/setLevel", json!({"level": "debug"}), false),
                "logging/setLevel",
                None,
            ),
            12 => (
                self.request(
                    "completion/complete",
                    json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "A"}}),
                    false,
                ),
                "completion/complete",
                None,
            ),
            13 => (
                self.request("no/such/method", json!({}), false),
                "no/such/method",
                None,
            ),
            14 => (
                Self::notification("notifications/initialized", json!({})),
                "notifications/initialized",
                None,
            ),
            15 => (
                Self::notification(
                    "notifications/cancelled",
                    json!({"requestId": format!("never-{}", self.next_id), "reason": "fuzz"}),
                ),
                "notifications/cancelled",
                None,
            ),
            16 => (
                Self::notification("notifications/bogus", json!({"x": 1})),
                "notifications/bogus",
                None,
            ),
            17 => (
                json!({"jsonrpc": "2.0", "id": self.fresh_id(), "result": {}}),
                "ping",
                None,
            ),
            18 => {
                let first = self.request("ping", json!({}), false);
                (json!([first, {"jsonrpc": "2.0"}]), "ping", None)
            }
            _ => (
                Self::notification(
                    "notifications/progress",
                    json!({"progressToken": 1, "progress": 0.5}),
                ),
                "notifications/progress",
                None,
            ),
        };
        (message, method.to_owned(), name)
    }

    /// A random JSON value, never deeper than a few levels.
    fn random_value(&mut self, depth: usize) -> Value {
        let choice = self.rng.random_range(0..if depth > 2 { 7u32 } else { 10 });
        match choice {
            0 => Value::Null,
            1 => json!(self.rng.random_bool(0.5)),
            2 => json!(self.rng.random::<i64>()),
            3 => json!(self.rng.random::<u64>()),
            4 => json!(self.rng.random_range(-1e300..1e300)),
            5 => json!(self.random_string()),
            6 => json!(""),
            7 => Value::Array(
                (0..self.rng.random_range(0..4))
                    .map(|_| self.random_value(depth + 1))
                    .collect(),
            ),
            8 => {
                let mut object = Map::new();
                for _ in 0..self.rng.random_range(0..4) {
                    object.insert(self.random_string(), self.random_value(depth + 1));
                }
                Value::Object(object)
            }
            _ => {
                // Deep nesting, past most parsers' recursion limits.
                let depth = self.rng.random_range(50..400);
                let mut value = Value::Null;
                for _ in 0..depth {
                    value = json!([value]);
                }
                value
            }
        }
    }

    fn random_string(&mut self) -> String {
        const PIECES: [&str; 12] = [
            "a", "é", "😀", "\u{0}", "\u{1f}", "\"", "\\", "\u{feff}", "{{", "%2F", "../",
            "\u{202e}",
        ];
        let len = if self.rng.random_ratio(1, 40) {
            self.rng.random_range(1_000..70_000)
        } else {
            self.rng.random_range(0..12)
        };
        (0..len)
            .map(|_| *PIECES.choose(&mut self.rng).unwrap_or(&"a"))
            .collect()
    }

    /// Breaks one node of `value`, chosen at random along one path from the root.
    fn mutate_value(&mut self, value: &mut Value, depth: usize) {
        let descend = depth < 6 && self.rng.random_bool(0.6);
        match value {
            Value::Object(object) if descend && !object.is_empty() => {
                let keys: Vec<String> = object.keys().cloned().collect();
                if let Some(key) = keys.choose(&mut self.rng)
                    && let Some(child) = object.get_mut(key)
                {
                    return self.mutate_value(child, depth + 1);
                }
            }
            Value::Array(items) if descend && !items.is_empty() => {
                let index = self.rng.random_range(0..items.len());
                return self.mutate_value(&mut items[index], depth + 1);
            }
            _ => {}
        }
        match (value, self.rng.random_range(0..5u32)) {
            (Value::Object(object), 0) if !object.is_empty() => {
                let keys: Vec<String> = object.keys().cloned().collect();
                if let Some(key) = keys.choose(&mut self.rng) {
                    object.remove(key);
                }
            }
            (Value::Object(object), 1) => {
                let key = if self.rng.random_bool(0.5) {
                    [
                        "id",
                        "method",
                        "params",
                        "jsonrpc",
                        "_meta",
                        "arguments",
                        "name",
                    ]
                    .choose(&mut self.rng)
                    .copied()
                    .unwrap_or("id")
                    .to_owned()
                } else {
                    self.random_string()
                };
                let new = self.random_value(depth);
                object.insert(key, new);
            }
            (Value::String(text), 2) => {
                *text = match self.rng.random_range(0..4u32) {
                    0 => "tools/call".to_owned(),
                    1 => "notifications/cancelled".to_owned(),
                    2 => format!("{text}{}", self.random_string()),
                    _ => self.random_string(),
                };
            }
            (node, _) => *node = self.random_value(depth),
        }
    }

    fn mutate_bytes(&mut self, bytes: &mut Vec<u8>) {
        match self.rng.random_range(0..7u32) {
            0 if !bytes.is_empty() => {
                let at = self.rng.random_range(0..bytes.len());
                bytes[at] ^= 1 << self.rng.random_range(0..8);
            }
            1 => {
                let at = self.rng.random_range(0..=bytes.len());
                let noise = [0xffu8, 0xfe, 0xc0, 0x80, 0x00, 0xed, 0xa0];
                let count = self.rng.random_range(1..4);
                for i in 0..count {
                    let byte = *noise.choose(&mut self.rng).unwrap_or(&0xff);
                    bytes.insert(at + i, byte);
                }
            }
            2 if !bytes.is_empty() => {
                let at = self.rng.random_range(0..bytes.len());
                bytes.truncate(at);
            }
            3 if !bytes.is_empty() => {
                let start = self.rng.random_range(0..bytes.len());
                let end = self.rng.random_range(start..=bytes.len());
                let piece = bytes[start..end].to_vec();
                bytes.extend_from_slice(&piece);
            }
            4 => {
                let len = self.rng.random_range(0..256);
                *bytes = (0..len).map(|_| self.rng.random::<u8>()).collect();
            }
            5 => {
                let mut with_bom = "\u{feff}".as_bytes().to_vec();
                with_bom.append(bytes);
                *bytes = with_bom;
            }
            _ => bytes.push(b'\r'),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_cover_requests_notifications_and_garbage() {
        let mut fuzzer = MessageFuzzer::new(11);
        let inputs: Vec<FuzzInput> = (0..2_000).map(|_| fuzzer.next_input()).collect();
        let requests = inputs.iter().filter(|i| i.answer_id.is_some()).count();
        let not_utf8 = inputs
            .iter()
            .filter(|i| std::str::from_utf8(&i.bytes).is_err())
            .count();
        let not_json = inputs
            .iter()
            .filter(|i| serde_json::from_slice::<Value>(&i.bytes).is_err())
            .count();
        assert!(requests > 500, "{requests} requests");
        assert!(not_utf8 > 20, "{not_utf8} inputs that are not UTF-8");
        assert!(not_json > 200, "{not_json} inputs that are not JSON");
        assert!(inputs.iter().all(|i| !i.bytes.contains(&b'\n')));
        assert!(inputs.iter().all(|i| {
            i.answer_id
                .as_ref()
                .and_then(Value::as_str)
                .is_none_or(|id| !id.starts_with(PROBE_ID_PREFIX))
        }));
    }
}
