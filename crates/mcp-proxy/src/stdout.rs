//! Reading a stdio upstream's stdout: one bounded line at a time, each checked to be JSON,
//! listings rewritten to keep `execution` ([`move_execution`]).
//!
//! rmcp's own reader skips lines that are not JSON and drops over-long ones, so a request
//! whose answer is garbage would wait for its timeout. This reader stops at the first such
//! line instead: it records why in the [`Fault`] and ends the stream, rmcp sees the
//! transport close, the request in flight fails with that reason, and the next request
//! reconnects (a fresh child).

use std::sync::{Arc, OnceLock};

use tokio::io::{
    AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncWriteExt as _, BufReader, DuplexStream,
};

use crate::listing::move_execution;

/// Why the reader stopped early, once it did.
pub(crate) type Fault = Arc<OnceLock<String>>;

/// How one bounded line read ended.
enum LineRead {
    /// A whole line (without its `\n`) is in the buffer.
    Line,
    /// The line grew past the limit; the reader stops here.
    TooLong,
    /// The upstream closed its stdout (a trailing line without `\n` is dropped).
    Eof,
}

/// Reads one `\n`-terminated line into `line` without letting it grow past `max` bytes.
async fn read_line<R: AsyncBufRead + Unpin>(
    source: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    line.clear();
    loop {
        let buf = source.fill_buf().await?;
        if buf.is_empty() {
            return Ok(LineRead::Eof);
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(end) => (end, true),
            None => (buf.len(), false),
        };
        if line.len().saturating_add(take) > max {
            return Ok(LineRead::TooLong);
        }
        line.extend_from_slice(&buf[..take]);
        source.consume(if done { take + 1 } else { take });
        if done {
            return Ok(LineRead::Line);
        }
    }
}

/// What is wrong with `line` as a message, if anything. The line's content is never
/// quoted: an upstream's stray output may hold anything.
fn check(line: &[u8]) -> Result<&str, String> {
    let text = std::str::from_utf8(line).map_err(|e| {
        format!(
            "the upstream wrote a line of {} bytes that is not UTF-8 ({e})",
            line.len()
        )
    })?;
    serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| {
        format!(
            "the upstream wrote a line of {} bytes that is not JSON ({e})",
            line.len()
        )
    })?;
    Ok(text)
}

/// A reader of `source` (an upstream's stdout) yielding its lines, each checked and with
/// listings rewritten, and the fault that ends it early: a line over `max_line` bytes, not
/// UTF-8 or not JSON. Blank lines are skipped. The copy runs on a task that ends with
/// `source`.
pub(crate) fn read_upstream<R: AsyncRead + Unpin + Send + 'static>(
    source: R,
    max_line: usize,
) -> (DuplexStream, Fault) {
    let fault = Fault::default();
    let (reader, mut writer) = tokio::io::duplex(1 << 16);
    let record = Arc::clone(&fault);
    tokio::spawn(async move {
        let mut source = BufReader::new(source);
        let mut line = Vec::new();
        loop {
            match read_line(&mut source, &mut line, max_line).await {
                Ok(LineRead::Line) => {}
                Ok(LineRead::TooLong) => {
                    let _ = record.set(format!(
                        "the upstream wrote a line longer than the {max_line}-byte limit"
                    ));
                    return;
                }
                Ok(LineRead::Eof) => return,
                Err(error) => {
                    tracing::debug!(%error, "reading an upstream's stdout");
                    return;
                }
            }
            let bytes = line.strip_suffix(b"\r").unwrap_or(&line);
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let text = match check(bytes) {
                Ok(text) => text,
                Err(reason) => {
                    let _ = record.set(reason);
                    return;
                }
            };
            let mut out = move_execution(text);
            out.push('\n');
            if writer.write_all(out.as_bytes()).await.is_err() {
                return;
            }
        }
    });
    (reader, fault)
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt as _;

    use super::*;

    async fn read_all(input: &'static [u8], max: usize) -> (String, Option<String>) {
        let (mut reader, fault) = read_upstream(input, max);
        let mut out = String::new();
        let _ = reader.read_to_string(&mut out).await;
        (out, fault.get().cloned())
    }

    #[tokio::test]
    async fn good_lines_pass_and_blank_ones_are_skipped() {
        let (out, fault) = read_all(b"{\"a\":1}\r\n\n  \n[1]\n", 64).await;
        assert_eq!(out, "{\"a\":1}\n[1]\n");
        assert_eq!(fault, None);
    }

    #[tokio::test]
    async fn the_first_bad_line_ends_the_stream_with_its_reason() {
        let (out, fault) = read_all(b"{\"a\":1}\nnot json\n{\"b\":2}\n", 64).await;
        assert_eq!(out, "{\"a\":1}\n");
        assert!(fault.unwrap().contains("not JSON"));

        let (out, fault) = read_all(b"\xff\xfe\n{\"b\":2}\n", 64).await;
        assert_eq!(out, "");
        assert!(fault.unwrap().contains("not UTF-8"));
    }

    #[tokio::test]
    async fn a_line_at_the_limit_passes_and_one_byte_more_does_not() {
        let (out, fault) = read_all(b"\"123456\"\n", 8).await;
        assert_eq!((out.as_str(), fault), ("\"123456\"\n", None));
        let (out, fault) = read_all(b"\"1234567\"\n{}\n", 8).await;
        assert_eq!(out, "");
        assert!(fault.unwrap().contains("8-byte limit"));
    }
}
