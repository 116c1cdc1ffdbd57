//! What downstream test suites need: helpers for testing servers built on mcp-core, so each
//! suite checks real behaviour instead of re-inventing the plumbing. Today that is
//! [`schema`], which validates what a server actually puts on the wire against the official
//! MCP 2026-07-28 and Tasks-extension JSON schemas from the shared folder beside the
//! repository; in-memory client/server pairs and task drivers are to follow.

pub mod schema;
