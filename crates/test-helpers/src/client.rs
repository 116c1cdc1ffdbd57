//! rmcp clients for tests, in either protocol era, and a client/server pair over an
//! in-memory duplex that drives the real wire without ports or processes.

use mcp_core::Server;
use rmcp::{
    RoleClient, ServiceExt as _,
    model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion},
    service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt as _, RunningService},
    transport::IntoTransport,
};
use tokio::task::JoinHandle;

/// The protocol era a test client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    /// 2025-11-25: the `initialize` handshake.
    Legacy,
    /// 2026-07-28: `server/discover`, then per-request `_meta`.
    Modern,
}

impl Lifecycle {
    /// Both eras, for tests that loop over them.
    pub const ALL: [Lifecycle; 2] = [Lifecycle::Legacy, Lifecycle::Modern];
}

/// A running rmcp test client.
pub type TestClient = RunningService<RoleClient, ClientConfig>;

/// The client configuration: name `test-client`; with `tasks` the client declares the
/// `io.modelcontextprotocol/tasks` extension, which 2026-07-28 requests then carry in
/// `_meta` (the per-request opt-in).
///
/// ```
/// let config = test_helpers::client::client_config(true);
/// assert!(config.capabilities.extensions.is_some());
/// ```
pub fn client_config(tasks: bool) -> ClientConfig {
    let capabilities = if tasks {
        ClientCapabilities::builder().enable_tasks().build()
    } else {
        ClientCapabilities::default()
    };
    ClientConfig::new(capabilities, Implementation::new("test-client", "0.0.0"))
}

/// Connects an rmcp client over `transport` in the given era.
///
/// ```no_run
/// # async fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
/// use test_helpers::client::{Lifecycle, connect};
/// let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.to_owned());
/// let client = connect(transport, Lifecycle::Modern, false).await?;
/// let tools = client.list_all_tools().await?;
/// # Ok(()) }
/// ```
pub async fn connect<T, E, A>(
    transport: T,
    lifecycle: Lifecycle,
    tasks: bool,
) -> Result<TestClient, ClientInitializeError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let config = client_config(tasks);
    match lifecycle {
        Lifecycle::Legacy => config.serve(transport).await,
        Lifecycle::Modern => {
            config
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                )
                .await
        }
    }
}

/// A client connected to a server over an in-memory duplex.
pub struct InMemory {
    /// The rmcp client.
    pub client: TestClient,
    /// The server's serving task; it ends when the client disconnects.
    pub server: JoinHandle<Result<(), mcp_core::ServerError>>,
}

/// Serves `server` (started, like over stdio) on one end of a duplex and connects a client
/// to the other, in the given era.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use test_helpers::client::{Lifecycle, in_memory};
/// let server = mcp_core::Server::new("s");
/// server.tool("ping", || async { "pong" }).unwrap();
/// let pair = in_memory(server, Lifecycle::Modern, false).await.unwrap();
/// let tools = pair.client.list_all_tools().await.unwrap();
/// assert_eq!(tools[0].name, "ping");
/// # });
/// ```
pub async fn in_memory(
    server: Server,
    lifecycle: Lifecycle,
    tasks: bool,
) -> Result<InMemory, ClientInitializeError> {
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_end);
    let server = tokio::spawn(server.serve_io(read, write));
    let client = connect(client_end, lifecycle, tasks).await?;
    Ok(InMemory { client, server })
}
