//! The per-request series, with their handles looked up once: a request then costs its
//! method's slot (found at compile time), a tool call one lookup by the tool's name in a map
//! read without a lock, and a few atomic operations, with no label built.

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock},
    time::Duration,
};

use ::metrics::{Counter, Histogram};
use arc_swap::ArcSwap;

/// The outcomes a request counter takes.
pub(crate) const REQUEST_OUTCOMES: [&str; 2] = ["ok", "error"];
/// The outcomes a tool call counter takes.
pub(crate) const TOOL_OUTCOMES: [&str; 5] = ["ok", "tool_error", "task", "input_required", "error"];

/// How many methods a request counter names by themselves ([`crate::server::SPEC_METHODS`],
/// then [`super::EXTENSION_METHODS`]); one more slot is `other`.
const KNOWN: usize = crate::server::SPEC_METHODS.len() + super::EXTENSION_METHODS.len();

/// A method as a request counter names it: its slot among the known methods, or `other`.
/// Call sites name theirs in a `const` block (`const { Method::known("tools/list") }`), so
/// that finding the slot costs a request nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Method(usize);

impl Method {
    /// The slot of `name`, `other` when this crate does not know it.
    pub(crate) const fn named(name: &str) -> Self {
        let mut slot = 0;
        while slot < KNOWN {
            if same(known_at(slot), name) {
                return Self(slot);
            }
            slot += 1;
        }
        Self(KNOWN)
    }

    /// The slot of `name`, which must be a method this crate knows: in a `const` block, a
    /// name misspelt fails the build instead of counting as `other`.
    pub(crate) const fn known(name: &str) -> Self {
        let method = Self::named(name);
        assert!(method.0 < KNOWN, "not a method the request counters know");
        method
    }

    /// The method's label: its name, or `other`.
    pub(crate) const fn label(self) -> &'static str {
        if self.0 < KNOWN {
            known_at(self.0)
        } else {
            "other"
        }
    }
}

/// The known method in `slot` (below [`KNOWN`]).
const fn known_at(slot: usize) -> &'static str {
    let spec = crate::server::SPEC_METHODS;
    if slot < spec.len() {
        spec[slot]
    } else {
        super::EXTENSION_METHODS[slot - spec.len()]
    }
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut at = 0;
    while at < a.len() {
        if a[at] != b[at] {
            return false;
        }
        at += 1;
    }
    true
}

/// One method's counters (by outcome) and duration histogram.
struct MethodHandles {
    outcomes: [Counter; REQUEST_OUTCOMES.len()],
    duration: Histogram,
}

/// One tool's counters (by outcome) and duration histogram.
pub(crate) struct ToolHandles {
    outcomes: [Counter; TOOL_OUTCOMES.len()],
    duration: Histogram,
}

impl ToolHandles {
    /// Counts a call that ended as `TOOL_OUTCOMES[outcome]` after `elapsed`.
    pub(crate) fn done(&self, outcome: usize, elapsed: Duration) {
        if let Some(counter) = self.outcomes.get(outcome) {
            counter.increment(1);
        }
        self.duration.record(elapsed);
    }
}

/// One slot per method a request counter names, filled the first time a request of that
/// method is counted.
static METHODS: [OnceLock<MethodHandles>; KNOWN + 1] = [const { OnceLock::new() }; KNOWN + 1];

type ToolMap = HashMap<Box<str>, Arc<ToolHandles>, foldhash::fast::RandomState>;

/// The tools seen so far. Read on every call, written once per tool: readers take a
/// snapshot and never wait for one another.
static TOOLS: OnceLock<ArcSwap<ToolMap>> = OnceLock::new();

/// Counts a request of `method` that ended as `REQUEST_OUTCOMES[outcome]` after `elapsed`.
pub(crate) fn request_done(method: Method, outcome: usize, elapsed: Duration) {
    let Some(slot) = METHODS.get(method.0) else {
        return;
    };
    let handles = slot.get_or_init(|| {
        let method = method.label();
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

/// The series of `tool`, if `exists(tool)`: a tool's handles are made the first time it is
/// seen, so the question is asked only of names not yet seen (and every time of a name the
/// server does not have, which then is not counted by name).
pub(crate) fn tool_series(
    tool: &str,
    exists: impl FnOnce(&str) -> bool,
) -> Option<Arc<ToolHandles>> {
    let tools = TOOLS.get_or_init(ArcSwap::default);
    if let Some(handles) = tools.load().get(tool) {
        return Some(Arc::clone(handles));
    }
    if !exists(tool) {
        return None;
    }
    let label = tool.to_owned();
    let made = Arc::new(ToolHandles {
        outcomes: TOOL_OUTCOMES.map(|outcome| {
            ::metrics::counter!("mcp_tool_calls_total", "tool" => label.clone(), "outcome" => outcome)
        }),
        duration: ::metrics::histogram!("mcp_tool_call_duration_seconds", "tool" => label),
    });
    tools.rcu(|current| {
        let mut next = ToolMap::clone(current);
        next.entry(tool.into()).or_insert_with(|| Arc::clone(&made));
        next
    });
    Some(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_finds_its_own_slot_and_an_unknown_one_is_other() {
        for slot in 0..KNOWN {
            assert_eq!(Method::named(known_at(slot)), Method(slot));
            assert_eq!(Method::named(known_at(slot)).label(), known_at(slot));
        }
        assert_eq!(const { Method::known("tools/call") }.label(), "tools/call");
        assert_eq!(Method::named("tools/cal").label(), "other");
        assert_eq!(Method::named("x/made-up"), Method(KNOWN));
    }
}
