//! What both floor binaries read and write: the JSON-RPC envelope and `tools/call`
//! parameters (borrowed from the body), a header's value, and a JSON answer.

use std::borrow::Cow;

use axum::{
    Router,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use serde_json::value::RawValue;

pub const PROTOCOL: &str = "2026-07-28";

#[derive(Deserialize)]
pub struct Envelope<'a> {
    #[serde(borrow)]
    pub jsonrpc: Cow<'a, str>,
    #[serde(borrow)]
    pub id: &'a RawValue,
    #[serde(borrow)]
    pub method: Cow<'a, str>,
    #[serde(borrow)]
    pub params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
pub struct CallParams<'a> {
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    #[serde(borrow)]
    pub arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta", borrow)]
    pub meta: Option<Meta<'a>>,
}

#[derive(Deserialize)]
pub struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
    pub protocol_version: Option<Cow<'a, str>>,
}

pub fn json(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

pub fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// Serves `app` on `address` on one runtime worker (the benchmarks pin each server to one
/// CPU), printing `listening on http://ADDR/mcp` first.
pub fn serve(address: &str, app: Router) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(address).await?;
        eprintln!("listening on http://{}/mcp", listener.local_addr()?);
        axum::serve(listener, app).await?;
        Ok(())
    })
}
