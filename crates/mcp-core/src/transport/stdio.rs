//! Serving over stdio: newline-delimited JSON-RPC on stdin and stdout.
//!
//! A stdio server keeps reading whatever arrives: a line that is not UTF-8, not JSON, or
//! longer than [`StdioConfig::max_line_bytes`] is answered with a `-32700` error and the
//! next line is read as usual; notifications it does not know are ignored. When stdin ends,
//! the requests still running get [`StdioConfig::drain_grace`] to answer, then the server
//! stops and [`Server::serve_stdio`] returns `Ok(())`.

use std::time::Duration;

use rmcp::{ServerHandler as _, ServiceExt as _, service::ServerInitializeError};

use crate::{McpService, Server, ServerError};

/// How a stdio (or any reader/writer) connection is served.
///
/// | setting | default | over it |
/// |---|---|---|
/// | [`max_line_bytes`](Self::max_line_bytes) | 16 MiB | the line is answered `-32700` and skipped; at most this much of a line is ever buffered |
/// | [`drain_grace`](Self::drain_grace) | 10 s | after end of input, requests still running are abandoned |
///
/// ```
/// use std::time::Duration;
/// let config = ferrymcp_core::StdioConfig::new()
///     .max_line_bytes(1024 * 1024)
///     .drain_grace(Duration::from_secs(2));
/// assert_eq!(config.max_line(), 1024 * 1024);
/// assert_eq!(config.grace(), Duration::from_secs(2));
/// ```
#[derive(Debug, Clone)]
pub struct StdioConfig {
    max_line_bytes: usize,
    drain_grace: Duration,
}

impl Default for StdioConfig {
    fn default() -> Self {
        Self {
            max_line_bytes: Self::DEFAULT_MAX_LINE_BYTES,
            drain_grace: Self::DEFAULT_DRAIN_GRACE,
        }
    }
}

impl StdioConfig {
    /// The default longest line: 16 MiB.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::StdioConfig::DEFAULT_MAX_LINE_BYTES, 16 * 1024 * 1024);
    /// ```
    pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

    /// The default time requests in flight get to answer after end of input: 10 s.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::StdioConfig::DEFAULT_DRAIN_GRACE.as_secs(), 10);
    /// ```
    pub const DEFAULT_DRAIN_GRACE: Duration = Duration::from_secs(10);

    /// The defaults: lines up to 16 MiB, a 10 s drain grace.
    ///
    /// ```
    /// let config = ferrymcp_core::StdioConfig::new();
    /// assert_eq!(config.max_line(), ferrymcp_core::StdioConfig::DEFAULT_MAX_LINE_BYTES);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The longest line accepted, in bytes, without its newline. A longer line is answered
    /// with `-32700` and its bytes are discarded as they arrive; the connection goes on.
    /// A value of 0 is taken as 1.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::StdioConfig::new().max_line_bytes(4096).max_line(), 4096);
    /// ```
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes.max(1);
        self
    }

    /// The longest line accepted, in bytes.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::StdioConfig::new().max_line(), 16 * 1024 * 1024);
    /// ```
    pub fn max_line(&self) -> usize {
        self.max_line_bytes
    }

    /// How long the requests still running when input ends get to answer before the
    /// server stops without them.
    ///
    /// ```
    /// let _ = ferrymcp_core::StdioConfig::new().drain_grace(std::time::Duration::from_millis(500));
    /// ```
    pub fn drain_grace(mut self, grace: Duration) -> Self {
        self.drain_grace = grace;
        self
    }

    /// The drain grace.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::StdioConfig::new().grace().as_secs(), 10);
    /// ```
    pub fn grace(&self) -> Duration {
        self.drain_grace
    }
}

impl Server {
    /// Starts the server and serves one client over this process's stdin and stdout until
    /// stdin ends, then stops it, with the default [`StdioConfig`]. Stdout carries only
    /// protocol messages: log to stderr.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), ferrymcp_core::ServerError> {
    /// ferrymcp_core::Server::new("demo").serve_stdio().await
    /// # }
    /// ```
    pub async fn serve_stdio(self) -> Result<(), ServerError> {
        self.serve_stdio_with(StdioConfig::default()).await
    }

    /// Like [`serve_stdio`](Self::serve_stdio), with `config`'s limits.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), ferrymcp_core::ServerError> {
    /// let config = ferrymcp_core::StdioConfig::new().max_line_bytes(1024 * 1024);
    /// ferrymcp_core::Server::new("demo").serve_stdio_with(config).await
    /// # }
    /// ```
    pub async fn serve_stdio_with(self, config: StdioConfig) -> Result<(), ServerError> {
        self.serve_io_with(tokio::io::stdin(), tokio::io::stdout(), config)
            .await
    }

    /// Like [`serve_stdio`](Self::serve_stdio), over any reader and writer (a pipe, a
    /// `tokio::io::duplex` in tests).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let (client_end, server_end) = tokio::io::duplex(4096);
    /// let (read, write) = tokio::io::split(server_end);
    /// drop(client_end); // the client hangs up at once
    /// ferrymcp_core::Server::new("demo").serve_io(read, write).await.unwrap();
    /// # });
    /// ```
    pub async fn serve_io<R, W>(self, read: R, write: W) -> Result<(), ServerError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        self.serve_io_with(read, write, StdioConfig::default())
            .await
    }

    /// Like [`serve_io`](Self::serve_io), with `config`'s limits. Returns `Ok(())` when the
    /// input ends, whether or not the client ever opened a session.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    /// let (client_end, server_end) = tokio::io::duplex(4096);
    /// let (read, write) = tokio::io::split(server_end);
    /// let config = ferrymcp_core::StdioConfig::new().max_line_bytes(64);
    /// let serving = tokio::spawn(ferrymcp_core::Server::new("demo").serve_io_with(read, write, config));
    /// let (client_read, mut client_write) = tokio::io::split(client_end);
    /// client_write.write_all(&[b'x'; 100]).await.unwrap();
    /// client_write.write_all(b"\n").await.unwrap();
    /// let mut answer = String::new();
    /// tokio::io::BufReader::new(client_read).read_line(&mut answer).await.unwrap();
    /// assert!(answer.contains("-32700"));
    /// drop(client_write);
    /// serving.await.unwrap().unwrap();
    /// # });
    /// ```
    pub async fn serve_io_with<R, W>(
        self,
        read: R,
        write: W,
        config: StdioConfig,
    ) -> Result<(), ServerError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let running = self.start().await?;
        let service = McpService::new(self);
        let transport = super::lines::LineTransport::new(
            read,
            write,
            config.max_line_bytes,
            config.drain_grace,
            service.supported_protocol_versions().into_owned(),
        );
        let mut abandoned = transport.abandoned();
        let outcome = match crate::served::Served(service).serve(transport).await {
            Ok(service) => tokio::select! {
                biased;
                outcome = service.waiting() => outcome
                    .map(drop)
                    .map_err(|e| ServerError::Transport(Box::new(e))),
                // The grace ran out: what still runs is dropped with the serve loop.
                () = async {
                    if abandoned.wait_for(|given_up| *given_up).await.is_err() {
                        // The transport is gone: the serve loop ends on its own.
                        std::future::pending::<()>().await;
                    }
                } => Ok(()),
            },
            // The input ended before a session opened: nothing was left to answer.
            Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
            Err(e) => Err(ServerError::Transport(Box::new(e))),
        };
        running.stop().await;
        outcome
    }
}
