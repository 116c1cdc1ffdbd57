//! An upstream's JSON-RPC message, read straight into the result its request's method
//! returns.
//!
//! rmcp reads a server message into `ServerJsonRpcMessage`, whose result is an untagged
//! union: serde buffers the JSON and tries some twenty result types in turn until one fits.
//! The proxy knows which method it called, so it reads the envelope once, keeping the
//! result as raw JSON, and then the result as the types that method returns, in the union's
//! own order. A result that none of them reads falls back to the union, so an answer is
//! never read differently from rmcp's reading, only faster.

use std::borrow::Cow;

use ferrymcp_core::ResultRelay;
use ferrymcp_types::{
    CallToolResult, ErrorData, GetPromptResult, ReadResourceResult, RequestId, ServerResult,
};
use rmcp::model::{
    ContentBlock, CreateTaskResult, GetTaskResult, InputRequiredResult, MetaObject, ResultType,
};
use serde::{
    Deserialize,
    de::{DeserializeOwned, SeqAccess, Visitor},
};
use serde_json::value::RawValue;

/// A server message as the proxy reads it: which request it answers, and how.
#[derive(Deserialize)]
struct Envelope<'a> {
    /// Only compared, so borrowed rather than copied.
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    #[serde(default)]
    id: Option<RequestId>,
    /// Present on requests and notifications, which answer nothing.
    #[serde(default, borrow)]
    method: Option<&'a RawValue>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<ErrorData>,
}

/// What one message from the upstream says about request `id` (a `method` request).
// Matched once, where it is read: boxing the answer would cost an allocation per call.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Reading {
    /// The answer: the method's result, or the upstream's JSON-RPC error.
    Answer(Result<ServerResult, ErrorData>),
    /// A notification, a request, or the answer to another request.
    Other,
}

/// Reads `message`, the JSON of one server message, as an answer to the `method` request
/// `id`; `Err` says why it is no JSON-RPC message or its result no result of `method`.
///
/// With `relay`, a plain complete `tools/call` result (see [`relayable`]) is not read: its
/// JSON goes to the relay as it came, and the answer is the relay's stand-in.
pub(crate) fn read(
    message: &[u8],
    id: &RequestId,
    method: &str,
    relay: Option<&ResultRelay>,
) -> Result<Reading, String> {
    let envelope: Envelope<'_> =
        serde_json::from_slice(message).map_err(|e| format!("not a JSON-RPC message: {e}"))?;
    if envelope.jsonrpc != "2.0" {
        return Err(format!(
            "not a JSON-RPC message: \"jsonrpc\" is {:?}, not \"2.0\"",
            envelope.jsonrpc
        ));
    }
    if envelope.method.is_some() {
        return Ok(Reading::Other);
    }
    match (envelope.result, envelope.error) {
        (Some(result), None) if envelope.id.as_ref() == Some(id) => {
            if let Some(relay) = relay
                && method == "tools/call"
                && let Some(is_error) = relayable(result)
            {
                let stand_in = relay.relay(result.to_owned(), is_error);
                return Ok(Reading::Answer(Ok(ServerResult::CallToolResult(stand_in))));
            }
            result_of(method, result)
                .map(|result| Reading::Answer(Ok(result)))
                .map_err(|e| format!("the result of {method}: {e}"))
        }
        // An error without an id answers the request whose POST it came on.
        (None, Some(error)) if envelope.id.as_ref().is_none_or(|e| e == id) => {
            Ok(Reading::Answer(Err(error)))
        }
        (Some(_), None) | (None, Some(_)) => Ok(Reading::Other),
        _ => Err("a message with neither a method, a result nor an error".to_owned()),
    }
}

/// `raw` read as a result of `method`: the types it returns first, the union last.
fn result_of(method: &str, raw: &RawValue) -> Result<ServerResult, serde_json::Error> {
    let typed = match method {
        "tools/call" => plain_call_result(raw)
            .map(ServerResult::CallToolResult)
            .or_else(|| as_::<CallToolResult>(raw, ServerResult::CallToolResult))
            .or_else(|| as_::<CreateTaskResult>(raw, ServerResult::CreateTaskResult))
            .or_else(|| as_::<InputRequiredResult>(raw, ServerResult::InputRequiredResult)),
        "resources/read" => as_::<ReadResourceResult>(raw, ServerResult::ReadResourceResult)
            .or_else(|| as_::<InputRequiredResult>(raw, ServerResult::InputRequiredResult)),
        "prompts/get" => as_::<GetPromptResult>(raw, ServerResult::GetPromptResult)
            .or_else(|| as_::<InputRequiredResult>(raw, ServerResult::InputRequiredResult)),
        "tasks/get" => as_::<GetTaskResult>(raw, ServerResult::GetTaskResult),
        _ => None,
    };
    match typed {
        Some(result) => Ok(result),
        None => serde_json::from_str(raw.get()),
    }
}

/// A `tools/call` result whose content is text blocks of `type` and `text` only, the
/// common answer, read as rmcp reads it but without serde's buffering of `type`-tagged
/// blocks (each block's keys and values copied once more before they are read). Any other
/// member, or any other block, gives `None`: the result is then read as rmcp reads it.
fn plain_call_result(raw: &RawValue) -> Option<CallToolResult> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Plain {
        #[serde(default)]
        result_type: Option<ResultType>,
        content: Option<Vec<PlainText>>,
        // Present (even as `null`) is `Some`, as rmcp reads it.
        #[serde(default, deserialize_with = "present")]
        structured_content: Option<serde_json::Value>,
        is_error: Option<bool>,
        #[serde(rename = "_meta")]
        meta: Option<MetaObject>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct PlainText {
        #[serde(rename = "type")]
        _kind: TextKind,
        text: String,
    }
    fn present<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<serde_json::Value>, D::Error> {
        serde_json::Value::deserialize(deserializer).map(Some)
    }

    let plain: Plain = serde_json::from_str(raw.get()).ok()?;
    // What rmcp refuses is left for rmcp to refuse, with its own words.
    if plain.result_type.as_ref().is_some_and(|t| !t.is_complete())
        || (plain.content.is_none()
            && plain.structured_content.is_none()
            && plain.is_error.is_none())
    {
        return None;
    }
    let mut result = CallToolResult::default();
    result.result_type = plain.result_type;
    result.content = plain
        .content
        .unwrap_or_default()
        .into_iter()
        .map(|block| ContentBlock::text(block.text))
        .collect();
    result.structured_content = plain.structured_content;
    result.is_error = plain.is_error;
    result.meta = plain.meta;
    Some(result)
}

/// Whether `raw` is a complete `tools/call` result a client can be sent as it is, and then
/// its `isError`: a `resultType` of `complete` (the 2026-07-28 schema requires it, and a
/// result read and written again gets it), a `content` array of text blocks (`type` and
/// `text` only), and at most a `structuredContent` object, a boolean `isError` and a `_meta`
/// object besides. That is the plain result [`plain_call_result`] reads, as the schema has
/// it; anything else (a `null` member, another block, a missing `resultType`) is read, and
/// written again, as rmcp reads it. Checked in one pass that copies nothing.
fn relayable(raw: &RawValue) -> Option<bool> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Shape<'a> {
        #[serde(rename = "resultType")]
        _result_type: Complete,
        #[serde(rename = "content")]
        _content: TextBlocks,
        #[serde(default, borrow, deserialize_with = "present")]
        structured_content: Option<&'a RawValue>,
        #[serde(default, borrow, deserialize_with = "present")]
        is_error: Option<&'a RawValue>,
        #[serde(rename = "_meta", default, borrow, deserialize_with = "present")]
        meta: Option<&'a RawValue>,
    }
    /// `"complete"`, and nothing else.
    #[derive(Deserialize)]
    enum Complete {
        #[serde(rename = "complete")]
        Complete,
    }
    /// Any JSON, `null` included: a member that is present is `Some`.
    fn present<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<&'de RawValue>, D::Error> {
        <&RawValue>::deserialize(deserializer).map(Some)
    }
    let is_object = |value: Option<&RawValue>| value.is_none_or(|v| v.get().starts_with('{'));

    let shape: Shape<'_> = serde_json::from_str(raw.get()).ok()?;
    let is_error = match shape.is_error.map(RawValue::get) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return None,
    };
    (is_object(shape.structured_content) && is_object(shape.meta)).then_some(is_error)
}

/// An array of text blocks, checked and not kept.
struct TextBlocks;

impl<'de> Deserialize<'de> for TextBlocks {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Blocks;
        impl<'de> Visitor<'de> for Blocks {
            type Value = TextBlocks;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of text blocks")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut blocks: A) -> Result<TextBlocks, A::Error> {
                while blocks.next_element::<TextBlock>()?.is_some() {}
                Ok(TextBlocks)
            }
        }
        deserializer.deserialize_seq(Blocks)
    }
}

/// `{"type": "text", "text": "…"}`, checked and not kept.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextBlock {
    #[serde(rename = "type")]
    _kind: TextKind,
    #[serde(rename = "text")]
    _text: AnyString,
}

/// A block's `type`: only `text` is read here.
#[derive(Deserialize)]
enum TextKind {
    #[serde(rename = "text")]
    Text,
}

/// A JSON string, checked and not kept.
struct AnyString;

impl<'de> Deserialize<'de> for AnyString {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Str;
        impl Visitor<'_> for Str {
            type Value = AnyString;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<AnyString, E> {
                Ok(AnyString)
            }
        }
        deserializer.deserialize_str(Str)
    }
}

/// `raw` as a `T`, wrapped by `variant`; `None` when it is no `T`.
fn as_<T: DeserializeOwned>(
    raw: &RawValue,
    variant: fn(T) -> ServerResult,
) -> Option<ServerResult> {
    serde_json::from_str(raw.get()).ok().map(variant)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(json: serde_json::Value, method: &str) -> ServerResult {
        let bytes = serde_json::to_vec(&json).unwrap();
        match read(&bytes, &RequestId::Number(7), method, None) {
            Ok(Reading::Answer(Ok(result))) => result,
            other => panic!("not a result: {other:?}"),
        }
    }

    /// Every result reads as the union reads it.
    #[test]
    fn results_read_as_the_union_reads_them() {
        let cases = [
            (
                "tools/call",
                serde_json::json!({"resultType": "complete", "content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}}),
            ),
            (
                "tools/call",
                serde_json::json!({"content": [], "isError": true}),
            ),
            (
                "tools/call",
                serde_json::json!({"content": [{"type": "text", "text": "x", "annotations": {"audience": ["user"]}}, {"type": "text", "text": "y"}]}),
            ),
            (
                "tools/call",
                serde_json::json!({"resultType": "task", "taskId": "t1", "status": "working", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 1000}),
            ),
            (
                "tools/call",
                serde_json::json!({"resultType": "input_required", "requestState": "s"}),
            ),
            // Fits no call result: the union's reading (an empty or custom result).
            ("tools/call", serde_json::json!({"something": "else"})),
            (
                "resources/read",
                serde_json::json!({"contents": [{"uri": "a://b", "text": "x"}]}),
            ),
            (
                "prompts/get",
                serde_json::json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}),
            ),
            (
                "tasks/get",
                serde_json::json!({"resultType": "complete", "taskId": "t1", "status": "completed", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 1000}),
            ),
            (
                "tasks/cancel",
                serde_json::json!({"resultType": "complete"}),
            ),
        ];
        for (method, result) in cases {
            let union: ServerResult = serde_json::from_value(result.clone()).unwrap();
            let ours = answer(
                serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": result}),
                method,
            );
            assert_eq!(
                serde_json::to_value(&ours).unwrap(),
                serde_json::to_value(&union).unwrap(),
                "{method}"
            );
            assert_eq!(
                std::mem::discriminant(&ours),
                std::mem::discriminant(&union),
                "{method}: {result}"
            );
        }
    }

    /// Text-only call results take the plain reading and read exactly as rmcp reads them;
    /// anything else is left to rmcp's reading.
    #[test]
    fn plain_call_results_read_as_rmcp_reads_them() {
        let plain = [
            serde_json::json!({"resultType": "complete", "content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}, "isError": false}),
            serde_json::json!({"content": [{"text": "a \"quoted\" \u{e9}", "type": "text"}, {"type": "text", "text": ""}]}),
            serde_json::json!({"content": [], "isError": true}),
            serde_json::json!({"structuredContent": null}),
            serde_json::json!({"content": null, "isError": false, "_meta": {"k": [1, 2]}}),
        ];
        for result in plain {
            let raw = serde_json::value::to_raw_value(&result).unwrap();
            let ours = plain_call_result(&raw).unwrap_or_else(|| panic!("not plain: {result}"));
            let theirs: CallToolResult = serde_json::from_value(result.clone()).unwrap();
            assert_eq!(ours, theirs, "{result}");
            assert_eq!(
                serde_json::to_value(&ours).unwrap(),
                serde_json::to_value(&theirs).unwrap()
            );
        }
        let other = [
            serde_json::json!({"content": [{"type": "text", "text": "5", "annotations": {"priority": 1}}]}),
            serde_json::json!({"content": [{"type": "text", "text": "5", "_meta": {}}]}),
            serde_json::json!({"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
            serde_json::json!({"content": [], "extra": 1}),
            serde_json::json!({"resultType": "task", "content": []}),
            serde_json::json!({"something": "else"}),
            serde_json::json!({"content": [{"type": "text"}]}),
        ];
        for result in other {
            let raw = serde_json::value::to_raw_value(&result).unwrap();
            assert!(plain_call_result(&raw).is_none(), "{result}");
        }
    }

    #[test]
    fn errors_notifications_and_other_ids_are_told_apart() {
        let read = |json: serde_json::Value| {
            read(
                &serde_json::to_vec(&json).unwrap(),
                &RequestId::Number(7),
                "tools/call",
                None,
            )
        };
        let error = read(
            serde_json::json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "bad"}}),
        );
        assert!(
            matches!(error, Ok(Reading::Answer(Err(ref e))) if e.message == "bad"),
            "{error:?}"
        );
        let anonymous = read(
            serde_json::json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse"}}),
        );
        assert!(matches!(anonymous, Ok(Reading::Answer(Err(_)))));
        for other in [
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 8, "result": {}}),
            serde_json::json!({"jsonrpc": "2.0", "id": "7", "result": {}}),
        ] {
            assert!(matches!(read(other), Ok(Reading::Other)));
        }
        for broken in [
            serde_json::json!({"jsonrpc": "1.0", "id": 7, "result": {}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 7}),
            serde_json::json!([1, 2]),
        ] {
            assert!(read(broken).is_err());
        }
    }

    /// Plain complete results are relayed as they came, and only they, with the `isError`
    /// rmcp reads; anything rmcp would read differently from the bytes, or the 2026-07-28
    /// schema refuse, is read and written again.
    #[test]
    fn only_plain_complete_call_results_are_relayed() {
        let relayed = [
            r#"{"resultType":"complete","content":[{"type":"text","text":"5"}],"structuredContent":{"result":5},"isError":false}"#,
            r#"{"content":[{"text":"caf\u00e9 \"q\"","type":"text"},{"type":"text","text":""}],"resultType":"complete"}"#,
            r#"{"resultType":"complete","content":[],"isError":true,"_meta":{"k":[1,2]}}"#,
            r#" { "resultType" : "complete" , "content" : [ ] , "structuredContent" : { } } "#,
        ];
        for json in relayed {
            let raw: Box<RawValue> = serde_json::from_str(json).unwrap();
            let theirs: CallToolResult = serde_json::from_str(json).unwrap();
            assert_eq!(
                relayable(&raw),
                Some(theirs.is_error.unwrap_or(false)),
                "{json}"
            );
        }
        let read_again = [
            // No resultType, or another one.
            r#"{"content":[{"type":"text","text":"5"}]}"#,
            r#"{"resultType":null,"content":[]}"#,
            r#"{"resultType":"task","content":[]}"#,
            // No content, or null where the schema wants a value.
            r#"{"resultType":"complete"}"#,
            r#"{"resultType":"complete","content":null}"#,
            r#"{"resultType":"complete","content":[],"isError":null}"#,
            r#"{"resultType":"complete","content":[],"isError":"true"}"#,
            r#"{"resultType":"complete","content":[],"structuredContent":null}"#,
            r#"{"resultType":"complete","content":[],"structuredContent":[1]}"#,
            r#"{"resultType":"complete","content":[],"_meta":null}"#,
            // Blocks other than plain text.
            r#"{"resultType":"complete","content":[{"type":"text","text":"5","annotations":{"priority":1}}]}"#,
            r#"{"resultType":"complete","content":[{"type":"text","text":"5","_meta":{}}]}"#,
            r#"{"resultType":"complete","content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}"#,
            r#"{"resultType":"complete","content":[{"type":"text","text":5}]}"#,
            r#"{"resultType":"complete","content":[{"type":"text"}]}"#,
            // Members rmcp drops or reads twice.
            r#"{"resultType":"complete","content":[],"extra":1}"#,
            r#"{"resultType":"complete","content":[],"isError":false,"isError":true}"#,
        ];
        for json in read_again {
            let raw: Box<RawValue> = serde_json::from_str(json).unwrap();
            assert_eq!(relayable(&raw), None, "{json}");
        }
    }
}
