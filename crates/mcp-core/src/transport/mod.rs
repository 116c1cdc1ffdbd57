//! Serving a [`Server`](crate::Server) to MCP clients: stdio and Streamable HTTP.

mod frames;
pub mod http;
mod lines;
mod request_id;
pub mod stdio;
