//! An upstream's answer as an SSE stream, read with a bound on each event.
//!
//! The SSE parser (`sse-stream`) keeps an event's lines until the blank line that ends it,
//! so an upstream that never ends one would make it buffer without end. [`Bounded`] counts
//! what the parser keeps of the event being read (its non-comment lines) and fails the
//! stream once that passes the limit; a blank line starts the count again.

use std::{
    pin::Pin,
    task::{Context, Poll, ready},
};

use bytes::Bytes;
use futures::{Stream, StreamExt as _, stream::BoxStream};
use sse_stream::{Error as SseError, Sse, SseStream};

/// Why a bounded SSE body stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EventError {
    /// One event grew past the limit before it ended.
    #[error("an SSE event exceeded the maximum size of {0} bytes")]
    TooLarge(usize),
    /// Reading the body failed.
    #[error("{0}")]
    Body(String),
}

/// How much of the current event the parser keeps.
struct Count {
    max: usize,
    /// The finished lines of the event (each with the newline the parser joins them with).
    kept: usize,
    /// The line being read.
    line: usize,
    line_is_comment: bool,
    after_cr: bool,
}

impl Count {
    fn observe(&mut self, chunk: &[u8]) -> Result<(), ()> {
        for &byte in chunk {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    self.after_cr = byte == b'\r';
                    self.end_line();
                }
                _ => {
                    self.after_cr = false;
                    if self.line == 0 {
                        self.line_is_comment = byte == b':';
                    }
                    self.line += 1;
                }
            }
            if self.kept.saturating_add(self.line) > self.max {
                return Err(());
            }
        }
        Ok(())
    }

    fn end_line(&mut self) {
        if self.line == 0 {
            self.kept = 0;
        } else if !self.line_is_comment {
            self.kept = self.kept.saturating_add(self.line + 1);
        }
        self.line = 0;
        self.line_is_comment = false;
    }
}

/// A body stream that fails once an SSE event in it passes the limit.
struct Bounded<S> {
    inner: S,
    count: Count,
    done: bool,
}

impl<S, E> Stream for Bounded<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    type Item = Result<Bytes, EventError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let item = match ready!(self.inner.poll_next_unpin(cx)) {
            Some(Ok(chunk)) => match self.count.observe(&chunk) {
                Ok(()) => Ok(chunk),
                Err(()) => Err(EventError::TooLarge(self.count.max)),
            },
            Some(Err(error)) => Err(EventError::Body(error.to_string())),
            None => return Poll::Ready(None),
        };
        self.done = item.is_err();
        Poll::Ready(Some(item))
    }
}

/// Whether `error` means the body broke off (the exchange failed), rather than that the
/// upstream sent what an SSE answer may not hold (an event past the limit, a malformed
/// line).
pub(crate) fn broke_off(error: &SseError) -> bool {
    matches!(
        error,
        SseError::Body(inner) if matches!(inner.downcast_ref::<EventError>(), Some(EventError::Body(_)))
    )
}

/// The events of `body`, each at most `max_event` bytes.
pub(crate) fn events<S, E>(body: S, max_event: usize) -> BoxStream<'static, Result<Sse, SseError>>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin + Send + 'static,
    E: std::fmt::Display,
{
    let bounded = Bounded {
        inner: body,
        count: Count {
            max: max_event,
            kept: 0,
            line: 0,
            line_is_comment: false,
            after_cr: false,
        },
        done: false,
    };
    SseStream::from_bytes_stream(bounded).boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(chunks: &[&'static str], max: usize) -> Vec<Result<String, String>> {
        let body = futures::stream::iter(
            chunks
                .iter()
                .map(|c| Ok::<_, std::io::Error>(Bytes::from_static(c.as_bytes())))
                .collect::<Vec<_>>(),
        );
        events(body, max)
            .map(|event| {
                event
                    .map(|e| e.data.unwrap_or_default())
                    .map_err(|e| e.to_string())
            })
            .collect()
            .await
    }

    #[tokio::test]
    async fn events_within_the_limit_pass_and_the_count_restarts_after_each() {
        let got = read(&["data: 12345\n\n", "data: 67890\r\n\r\n"], 12).await;
        assert_eq!(got, vec![Ok("12345".to_owned()), Ok("67890".to_owned())]);
    }

    #[tokio::test]
    async fn an_event_past_the_limit_fails_the_stream_even_split_across_chunks() {
        let got = read(&["data: 1234", "5678", "9\n\n"], 12).await;
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].as_ref().is_err_and(|e| e.contains("12 bytes")),
            "{got:?}"
        );
    }

    #[tokio::test]
    async fn comments_do_not_count() {
        // Kept, the comment and the data line would be 21 bytes.
        let got = read(&[": ping1234\n", "data: 1234\n\n"], 12).await;
        assert_eq!(got, vec![Ok("1234".to_owned())]);
    }
}
