//! Splitting a byte stream into newline-terminated lines, with a bound, and without ever
//! ending the stream over what a line contains.
//!
//! `tokio_util`'s `LinesCodec` decodes UTF-8 itself and reports a bad line as an error, after
//! which `FramedRead` ends the stream: one stray byte would end a stdio connection. This
//! decoder hands out raw bytes and leaves their meaning to the transport; a line over the
//! limit is reported once and the rest of it discarded as it arrives, so no more than the
//! limit (plus one read) is ever buffered.

use std::io;

use tokio_util::{
    bytes::{Buf as _, Bytes, BytesMut},
    codec::Decoder,
};

/// What the decoder found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// One line, without its `\n`.
    Line(Bytes),
    /// A line longer than the limit; its bytes are dropped up to the next `\n`.
    TooLong,
}

pub(crate) struct LineFrames {
    max: usize,
    /// How far the current buffer was already searched for `\n`.
    searched: usize,
    /// Inside a line over the limit, dropping bytes until its end.
    discarding: bool,
}

impl LineFrames {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            searched: 0,
            discarding: false,
        }
    }
}

impl Decoder for LineFrames {
    type Item = Frame;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, io::Error> {
        loop {
            let newline = src[self.searched..]
                .iter()
                .position(|&b| b == b'\n')
                .map(|at| self.searched + at);
            if self.discarding {
                match newline {
                    Some(at) => {
                        src.advance(at + 1);
                        self.searched = 0;
                        self.discarding = false;
                        continue;
                    }
                    None => {
                        src.clear();
                        self.searched = 0;
                        return Ok(None);
                    }
                }
            }
            return Ok(match newline {
                Some(at) if at <= self.max => {
                    let mut line = src.split_to(at + 1);
                    line.truncate(at);
                    self.searched = 0;
                    Some(Frame::Line(line.freeze()))
                }
                Some(at) => {
                    src.advance(at + 1);
                    self.searched = 0;
                    Some(Frame::TooLong)
                }
                None if src.len() > self.max => {
                    src.clear();
                    self.searched = 0;
                    self.discarding = true;
                    Some(Frame::TooLong)
                }
                None => {
                    self.searched = src.len();
                    None
                }
            });
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, io::Error> {
        if let Some(frame) = self.decode(src)? {
            return Ok(Some(frame));
        }
        if self.discarding || src.is_empty() {
            src.clear();
            self.discarding = false;
            self.searched = 0;
            return Ok(None);
        }
        // The last line, without a trailing newline.
        self.searched = 0;
        Ok(Some(Frame::Line(src.split().freeze())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(max: usize, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut decoder = LineFrames::new(max);
        let mut buffer = BytesMut::new();
        let mut out = Vec::new();
        for chunk in chunks {
            buffer.extend_from_slice(chunk);
            while let Some(frame) = decoder.decode(&mut buffer).unwrap() {
                out.push(frame);
            }
            assert!(buffer.len() <= max + chunk.len(), "buffered past the limit");
        }
        while let Some(frame) = decoder.decode_eof(&mut buffer).unwrap() {
            out.push(frame);
        }
        out
    }

    fn line(text: &[u8]) -> Frame {
        Frame::Line(Bytes::copy_from_slice(text))
    }

    #[test]
    fn lines_split_on_newlines_across_chunks() {
        let frames = decode_all(16, &[b"ab", b"c\nde", b"f\n\xff\n", b"tail"]);
        assert_eq!(
            frames,
            vec![line(b"abc"), line(b"def"), line(b"\xff"), line(b"tail")]
        );
    }

    #[test]
    fn a_line_at_the_limit_passes_one_over_is_dropped_to_its_end() {
        let frames = decode_all(4, &[b"abcd\nabcde\nok\n"]);
        assert_eq!(frames, vec![line(b"abcd"), Frame::TooLong, line(b"ok")]);
    }

    #[test]
    fn an_endless_line_is_reported_once_and_never_buffered() {
        let chunk = [b'x'; 10];
        let mut chunks: Vec<&[u8]> = vec![&chunk; 100];
        chunks.push(b"x\nnext\n");
        let frames = decode_all(8, &chunks);
        assert_eq!(frames, vec![Frame::TooLong, line(b"next")]);
    }

    /// What the decoder must find in `input`, whatever the chunking: one frame per line.
    fn model(max: usize, input: &[u8]) -> Vec<Frame> {
        let mut segments: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
        if segments.last().is_some_and(|last| last.is_empty()) {
            segments.pop();
        }
        segments
            .into_iter()
            .map(|segment| {
                if segment.len() <= max {
                    line(segment)
                } else {
                    Frame::TooLong
                }
            })
            .collect()
    }

    /// Seeded random inputs (mostly short lines, some long, bytes of every value) cut into
    /// random chunks decode exactly as the model says, never buffering past the limit.
    #[test]
    fn random_inputs_in_random_chunks_decode_as_the_model_says() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |bound: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % bound
        };
        for _ in 0..2_000 {
            let max = 1 + next(40) as usize;
            let len = next(400) as usize;
            let input: Vec<u8> = (0..len)
                .map(|_| match next(10) {
                    0 | 1 => b'\n',
                    2 => next(256) as u8,
                    _ => b'a' + next(26) as u8,
                })
                .collect();
            let mut chunks = Vec::new();
            let mut rest = input.as_slice();
            while !rest.is_empty() {
                let take = (1 + next(60) as usize).min(rest.len());
                let (chunk, tail) = rest.split_at(take);
                chunks.push(chunk);
                rest = tail;
            }
            assert_eq!(
                decode_all(max, &chunks),
                model(max, &input),
                "{input:?} max {max}"
            );
        }
    }

    #[test]
    fn an_over_long_last_line_without_newline_is_reported() {
        let frames = decode_all(3, &[b"abcdef"]);
        assert_eq!(frames, vec![Frame::TooLong]);
    }
}
