//! Fixtures more than one suite shares: the proxy's upstreams, the SEP-2663 tool set, the
//! mount tree of the resolution suites, a 2026-07-28 call posted over HTTP, and the
//! elicitation the input-round suites ask with.

pub mod input;
pub mod modern;
pub mod proxy;
pub mod tasks;
pub mod tree;
