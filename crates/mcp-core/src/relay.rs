//! Results relayed as JSON: a tool that passes on another server's answer hands its JSON to
//! the transport, which sends it as it came instead of reading it into a `CallToolResult`
//! and writing that out again.
//!
//! Only a call nothing else can see the result of gets a [`ResultRelay`]
//! ([`Context::result_relay`](crate::Context::result_relay)): the transport answers it
//! itself (2026-07-28 over HTTP), no middleware runs on the way from the client to the tool,
//! every extension on the way [leaves results unchanged](crate::Extension::leaves_results_unchanged),
//! and the tool is the first the request runs. Anywhere else the tool returns its result as
//! usual.

use std::sync::{
    Arc, OnceLock,
    atomic::{AtomicU8, Ordering},
};

use ferrymcp_types::CallToolResult;
use serde_json::value::RawValue;

/// Nothing has yet closed the way or taken it.
const OPEN: u8 = 0;
/// Something on the way may see or change the result: nothing is relayed.
const CLOSED: u8 = 1;
/// The request's first tool took it.
const TAKEN: u8 = 2;

/// The way from one tool straight to the client, for a result that is already JSON.
///
/// A tool that has it may call [`relay`](Self::relay) with a complete `tools/call` result as
/// JSON, and return what that gives back; the client then gets the JSON as it is (its
/// numbers, escapes and member order included), not the tool's return value.
///
/// ```
/// use ferrymcp_core::{Context, Server, ToolDef, ToolError, types::CallToolResult};
/// use serde_json::value::RawValue;
///
/// async fn cached(cx: Context) -> Result<CallToolResult, ToolError> {
///     let json = r#"{"resultType":"complete","content":[{"type":"text","text":"5"}],"isError":false}"#;
///     Ok(match cx.result_relay() {
///         Some(relay) => relay.relay(RawValue::from_string(json.to_owned())?, false),
///         None => serde_json::from_str(json)?,
///     })
/// }
/// Server::new("s").add_tool(ToolDef::new("cached", cached)).unwrap();
/// ```
#[derive(Clone)]
pub struct ResultRelay(Arc<Slot>);

struct Slot {
    state: AtomicU8,
    json: OnceLock<Box<RawValue>>,
}

impl ResultRelay {
    /// An open way, for a transport that can send a relayed result.
    pub(crate) fn open() -> Self {
        Self(Arc::new(Slot {
            state: AtomicU8::new(OPEN),
            json: OnceLock::new(),
        }))
    }

    /// Something on the way may see or change the result: nothing is relayed. A way already
    /// taken stays taken: what the taking tool's own calls pass through is not between that
    /// tool and the client.
    pub(crate) fn close(&self) {
        let _ = self
            .0
            .state
            .compare_exchange(OPEN, CLOSED, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Takes the way for the request's first tool; `false` when closed or taken already.
    pub(crate) fn take(&self) -> bool {
        self.0
            .state
            .compare_exchange(OPEN, TAKEN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Sends `json`, a complete `tools/call` result, to the client in place of the tool's
    /// return value, which should be the result this gives back: empty, with `isError` as
    /// `is_error` says (what metrics count the call as).
    ///
    /// `json` is sent unchecked: it must be a JSON object a 2026-07-28 client reads as a
    /// `CallToolResult`, `"resultType": "complete"` included. Only the first call relays;
    /// later ones change nothing.
    ///
    /// ```
    /// # use ferrymcp_core::{Context, types::CallToolResult};
    /// # fn tool(cx: &Context, json: Box<serde_json::value::RawValue>) -> Option<CallToolResult> {
    /// let stand_in = cx.result_relay()?.relay(json, false);
    /// assert!(stand_in.content.is_empty());
    /// # Some(stand_in) }
    /// ```
    pub fn relay(&self, json: Box<RawValue>, is_error: bool) -> CallToolResult {
        let _ = self.0.json.set(json);
        let mut stand_in = CallToolResult::default();
        stand_in.is_error = Some(is_error);
        stand_in
    }

    /// The result relayed, if any.
    pub(crate) fn relayed(&self) -> Option<&RawValue> {
        self.0.json.get().map(|json| &**json)
    }
}

impl std::fmt::Debug for ResultRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.0.state.load(Ordering::Acquire) {
            OPEN => "open",
            CLOSED => "closed",
            _ => "taken",
        };
        f.debug_struct("ResultRelay")
            .field("state", &state)
            .field("relayed", &self.0.json.get().is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).expect("JSON")
    }

    #[test]
    fn a_closed_way_is_never_taken_and_a_taken_one_never_closes() {
        let closed = ResultRelay::open();
        closed.close();
        assert!(!closed.take());

        let taken = ResultRelay::open();
        assert!(taken.take());
        taken.close();
        assert!(!taken.take(), "taken once only");
        let _ = taken.relay(json(r#"{"content":[]}"#), false);
        assert_eq!(
            taken.relayed().map(RawValue::get),
            Some(r#"{"content":[]}"#)
        );
    }

    #[test]
    fn only_the_first_relay_is_sent() {
        let relay = ResultRelay::open();
        let stand_in = relay.relay(json(r#"{"isError":true}"#), true);
        assert_eq!(stand_in.is_error, Some(true));
        let _ = relay.relay(json(r#"{"isError":false}"#), false);
        assert_eq!(
            relay.relayed().map(RawValue::get),
            Some(r#"{"isError":true}"#)
        );
    }
}
