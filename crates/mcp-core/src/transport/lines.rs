//! Newline-delimited JSON-RPC over any reader and writer, answering bad lines.
//!
//! rmcp's own line codec drops a line it cannot parse, so a client that sends invalid JSON
//! (or a number out of range, such as `1e400`) waits forever. This transport answers such a
//! line itself, as JSON-RPC requires: `-32700` for text that is not JSON, `-32600` for JSON
//! that is not a JSON-RPC message (echoing its `id` when it has one), and `-32600` for a line
//! over 16 MiB. Notifications that fail to parse are ignored, since they get no answer.
//! `receive` stays cancel-safe: it never awaits anything but the next line.

use std::{io, sync::Arc};

use futures::StreamExt as _;
use mcp_types::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::{RoleServer, transport::Transport};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

/// The longest line accepted, as rmcp's codec: 16 MiB.
const MAX_LINE: usize = 16 * 1024 * 1024;

pub(crate) struct LineTransport<R, W> {
    lines: FramedRead<R, LinesCodec>,
    writer: Arc<tokio::sync::Mutex<W>>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LineTransport<R, W> {
    pub(crate) fn new(read: R, write: W) -> Self {
        Self {
            lines: FramedRead::new(read, LinesCodec::new_with_max_length(MAX_LINE)),
            writer: Arc::new(tokio::sync::Mutex::new(write)),
        }
    }
}

async fn write_line<W: AsyncWrite + Unpin>(
    writer: &tokio::sync::Mutex<W>,
    line: Vec<u8>,
) -> io::Result<()> {
    let mut writer = writer.lock().await;
    writer.write_all(&line).await?;
    writer.flush().await
}

/// An error response; `id` is left out when the request's is unknown, as the MCP schema
/// requires (it allows only a string or an integer).
fn error_line(id: Value, code: i32, message: String) -> Vec<u8> {
    let mut answer = json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}});
    if !id.is_null() {
        answer["id"] = id;
    }
    let mut line = answer.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// The answer to a line that is not a valid client message, if it deserves one.
fn reject(line: &str, error: &serde_json::Error) -> Option<Vec<u8>> {
    match serde_json::from_str::<Value>(line) {
        Err(parse) => Some(error_line(
            Value::Null,
            mcp_types::codes::PARSE_ERROR,
            format!("Parse error: {parse}"),
        )),
        Ok(value) => {
            let id = value.get("id").cloned();
            if id.is_none() && value.get("method").is_some() {
                tracing::debug!(%error, "ignoring a notification that does not parse");
                return None;
            }
            let id = match id {
                Some(id @ (Value::String(_) | Value::Number(_))) => id,
                _ => Value::Null,
            };
            Some(error_line(
                id,
                mcp_types::codes::INVALID_REQUEST,
                format!("Invalid Request: {error}"),
            ))
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = Arc::clone(&self.writer);
        async move {
            let mut line = serde_json::to_vec(&item).map_err(io::Error::other)?;
            line.push(b'\n');
            write_line(&writer, line).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let answer = match self.lines.next().await? {
                Ok(line) => {
                    let line = line.trim_start_matches('\u{feff}').trim_end_matches('\r');
                    if line.trim().is_empty() {
                        continue;
                    }
                    match serde_json::from_str::<ClientJsonRpcMessage>(line) {
                        Ok(message) => return Some(message),
                        Err(error) => reject(line, &error),
                    }
                }
                Err(LinesCodecError::MaxLineLengthExceeded) => Some(error_line(
                    Value::Null,
                    mcp_types::codes::INVALID_REQUEST,
                    format!("Invalid Request: the message exceeds {MAX_LINE} bytes"),
                )),
                Err(LinesCodecError::Io(error)) => {
                    if error.kind() == io::ErrorKind::InvalidData {
                        Some(error_line(
                            Value::Null,
                            mcp_types::codes::PARSE_ERROR,
                            "Parse error: the message is not UTF-8".to_owned(),
                        ))
                    } else {
                        tracing::debug!(%error, "stdio read failed");
                        return None;
                    }
                }
            };
            if let Some(answer) = answer {
                // rmcp's serve loop may drop this future at any await (it selects over
                // `receive`), so the answer is written by its own task: a line consumed here
                // is always answered.
                let writer = Arc::clone(&self.writer);
                tokio::spawn(async move {
                    if let Err(error) = write_line(&writer, answer).await {
                        tracing::debug!(%error, "could not answer a malformed message");
                    }
                });
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.shutdown().await
    }
}
