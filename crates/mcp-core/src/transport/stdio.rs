//! Serving over stdio: newline-delimited JSON-RPC on stdin and stdout.

use rmcp::ServiceExt as _;

use crate::{McpService, Server, ServerError};

impl Server {
    /// Starts the server and serves one client over this process's stdin and stdout until
    /// the client disconnects, then stops it. Stdout carries only protocol messages: log to
    /// stderr.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), mcp_core::ServerError> {
    /// mcp_core::Server::new("demo").serve_stdio().await
    /// # }
    /// ```
    pub async fn serve_stdio(self) -> Result<(), ServerError> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Like [`serve_stdio`](Self::serve_stdio), over any reader and writer (a pipe, a
    /// `tokio::io::duplex` in tests).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let (client_end, server_end) = tokio::io::duplex(4096);
    /// let (read, write) = tokio::io::split(server_end);
    /// drop(client_end); // the client hangs up at once
    /// mcp_core::Server::new("demo").serve_io(read, write).await.ok();
    /// # });
    /// ```
    pub async fn serve_io<R, W>(self, read: R, write: W) -> Result<(), ServerError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let running = self.start().await?;
        let outcome = match McpService::new(self)
            .serve(super::lines::LineTransport::new(read, write))
            .await
        {
            Ok(service) => service
                .waiting()
                .await
                .map(drop)
                .map_err(|e| ServerError::Transport(Box::new(e))),
            Err(e) => Err(ServerError::Transport(Box::new(e))),
        };
        running.stop().await;
        outcome
    }
}
