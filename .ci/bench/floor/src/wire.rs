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

/// Serves `app` on `address` on `runtime`, printing `listening on http://ADDR/mcp` first.
pub fn serve(
    address: &str,
    app: Router,
    runtime: std::io::Result<tokio::runtime::Runtime>,
) -> Result<(), Box<dyn std::error::Error>> {
    runtime?.block_on(async {
        let listener = tokio::net::TcpListener::bind(address).await?;
        eprintln!("listening on http://{}/mcp", listener.local_addr()?);
        axum::serve(listener, app).await?;
        Ok(())
    })
}

/// The runtime a floor binary serves on. `as_the_gateway`: the one `ferrymcp-gateway`
/// picks, one thread when the process may use one CPU (else tokio's multi-thread runtime);
/// otherwise a multi-thread runtime with one worker, as the demo runs in `http_floor.sh`
/// (`TOKIO_WORKER_THREADS=1`). The benchmarks pin each server to one CPU.
pub fn runtime(as_the_gateway: bool) -> std::io::Result<tokio::runtime::Runtime> {
    let one_cpu = std::thread::available_parallelism().is_ok_and(|n| n.get() == 1);
    let mut builder = if as_the_gateway && one_cpu {
        tokio::runtime::Builder::new_current_thread()
    } else if as_the_gateway {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(1);
        builder
    };
    builder.enable_all().build()
}
