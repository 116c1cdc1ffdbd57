//! [`shutdown_signal`]: the signal a server stops on.

/// Resolves when the process is asked to stop: Ctrl-C (SIGINT) or, on Unix, SIGTERM (what
/// `docker stop`, Kubernetes and systemd send). [`Server::serve_http`](crate::Server::serve_http)
/// stops on it; pass it to [`HttpServer::run_until`](crate::HttpServer::run_until) to do the
/// same with a server of your own.
///
/// ```no_run
/// # async fn run(http: ferrymcp_core::HttpServer) -> Result<(), ferrymcp_core::ServerError> {
/// http.run_until(ferrymcp_core::shutdown_signal()).await
/// # }
/// ```
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(error) => {
                tracing::warn!(%error, "cannot watch SIGTERM; stopping on Ctrl-C only");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
