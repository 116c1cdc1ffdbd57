//! The per-request series, with their handles looked up once: a call then costs a map
//! lookup by its method or tool name and a few atomic operations, with no label built.

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock, PoisonError, RwLock},
    time::Duration,
};

use ::metrics::{Counter, Histogram};

/// The outcomes a request counter takes.
pub(crate) const REQUEST_OUTCOMES: [&str; 2] = ["ok", "error"];
/// The outcomes a tool call counter takes.
pub(crate) const TOOL_OUTCOMES: [&str; 5] = ["ok", "tool_error", "task", "input_required", "error"];

/// One method's counters (by outcome) and duration histogram.
struct MethodHandles {
    outcomes: [Counter; REQUEST_OUTCOMES.len()],
    duration: Histogram,
}

/// One tool's counters (by outcome) and duration histogram.
struct ToolHandles {
    outcomes: [Counter; TOOL_OUTCOMES.len()],
    duration: Histogram,
}

/// One slot per method a request counter names (the known ones, then `other`), filled the
/// first time a request of that method is counted.
const METHOD_SLOTS: usize = crate::server::SPEC_METHODS.len() + super::EXTENSION_METHODS.len() + 1;
static METHODS: [OnceLock<MethodHandles>; METHOD_SLOTS] = [const { OnceLock::new() }; METHOD_SLOTS];
static TOOLS: RwLock<Option<HashMap<Box<str>, Arc<ToolHandles>>>> = RwLock::new(None);

/// Counts a request of `method` (one of [`super::known_methods`] or `other`) that ended
/// as `REQUEST_OUTCOMES[outcome]` after `elapsed`.
pub(crate) fn request_done(method: &'static str, outcome: usize, elapsed: Duration) {
    let Some((slot, method)) = super::known_methods()
        .chain(std::iter::once("other"))
        .enumerate()
        .find(|(_, known)| *known == method)
    else {
        return;
    };
    let Some(slot) = METHODS.get(slot) else {
        return;
    };
    let handles = slot.get_or_init(|| {
        MethodHandles {
        outcomes: REQUEST_OUTCOMES.map(|outcome| {
            ::metrics::counter!("mcp_requests_total", "method" => method, "outcome" => outcome)
        }),
        duration: ::metrics::histogram!("mcp_request_duration_seconds", "method" => method),
    }
    });
    if let Some(counter) = handles.outcomes.get(outcome) {
        counter.increment(1);
    }
    handles.duration.record(elapsed);
}

/// Counts a call of `tool` that ended as `TOOL_OUTCOMES[outcome]` after `elapsed`, if
/// `exists(tool)`: a tool's handles are made the first time it is seen, so the question is
/// asked only of names not yet seen (and every time of a name the server does not have).
pub(crate) fn tool_call_done(
    tool: &str,
    outcome: usize,
    elapsed: Duration,
    exists: impl FnOnce(&str) -> bool,
) {
    let record = |handles: &ToolHandles| {
        if let Some(counter) = handles.outcomes.get(outcome) {
            counter.increment(1);
        }
        handles.duration.record(elapsed);
    };
    {
        let tools = TOOLS.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(handles) = tools.as_ref().and_then(|tools| tools.get(tool)) {
            record(handles);
            return;
        }
    }
    if !exists(tool) {
        return;
    }
    let label = tool.to_owned();
    let handles = Arc::new(ToolHandles {
        outcomes: TOOL_OUTCOMES.map(|outcome| {
            ::metrics::counter!("mcp_tool_calls_total", "tool" => label.clone(), "outcome" => outcome)
        }),
        duration: ::metrics::histogram!("mcp_tool_call_duration_seconds", "tool" => label),
    });
    record(&handles);
    TOOLS
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashMap::new)
        .entry(tool.into())
        .or_insert(handles);
}
