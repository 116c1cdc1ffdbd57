//! Fixtures more than one suite shares: the proxy's upstreams, the SEP-2663 tool set, and the
//! mount tree of the resolution suites.

pub mod proxy;
pub mod tasks;
pub mod tree;
