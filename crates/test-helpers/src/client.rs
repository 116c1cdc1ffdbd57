//! rmcp clients for tests, in either protocol era, and a client/server pair over an
//! in-memory duplex that drives the real wire without ports or processes.

use ferrymcp_core::Server;
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
/// let config = ferrymcp_test_helpers::client::client_config(true);
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

/// Connects any client handler (e.g. a [`RecordingClient`]) in the given era.
///
/// ```no_run
/// # async fn demo(transport: tokio::io::DuplexStream) {
/// use ferrymcp_test_helpers::client::{Lifecycle, RecordingClient, connect_with};
/// let (handler, _events) = RecordingClient::new(false);
/// let client = connect_with(handler, transport, Lifecycle::Legacy).await.unwrap();
/// # drop(client);
/// # }
/// ```
pub async fn connect_with<H, T, E, A>(
    handler: H,
    transport: T,
    lifecycle: Lifecycle,
) -> Result<RunningService<RoleClient, H>, ClientInitializeError>
where
    H: rmcp::ClientHandler,
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    match lifecycle {
        Lifecycle::Legacy => handler.serve(transport).await,
        Lifecycle::Modern => {
            handler
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

/// Something a [`RecordingClient`] saw from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent {
    /// An `elicitation/create` request, with its message.
    Elicited(String),
    /// `notifications/message`: the level and data.
    Log(String, serde_json::Value),
    /// `notifications/progress`: progress, total, message.
    Progress(f64, Option<f64>, Option<String>),
    /// `notifications/tools/list_changed`.
    ToolsChanged,
    /// `notifications/resources/list_changed`.
    ResourcesChanged,
    /// `notifications/prompts/list_changed`.
    PromptsChanged,
    /// `notifications/resources/updated`: the resource's URI.
    ResourceUpdated(String),
}

/// A client that declares form elicitation, answers every elicitation with a fixed content
/// (or declines), and reports what the server sent on a channel, so tests wait on events
/// instead of sleeping.
///
/// ```
/// use ferrymcp_test_helpers::client::RecordingClient;
/// let (client, _events) = RecordingClient::new(true);
/// let _answering = client.answering(serde_json::json!({"name": "Ada"}));
/// ```
#[derive(Clone)]
pub struct RecordingClient {
    config: ClientConfig,
    answer: Option<serde_json::Value>,
    events: tokio::sync::mpsc::UnboundedSender<ClientEvent>,
}

impl RecordingClient {
    /// A recording client (opted in to tasks when `tasks`) and the receiver of its events.
    /// It declines elicitations until [`answering`](Self::answering) is set.
    pub fn new(tasks: bool) -> (Self, tokio::sync::mpsc::UnboundedReceiver<ClientEvent>) {
        let mut config = client_config(tasks);
        config.capabilities.elicitation = Some(rmcp::model::ElicitationCapability::default());
        let (events, receiver) = tokio::sync::mpsc::unbounded_channel();
        (
            Self {
                config,
                answer: None,
                events,
            },
            receiver,
        )
    }

    /// Accepts every elicitation with `content`.
    pub fn answering(mut self, content: serde_json::Value) -> Self {
        self.answer = Some(content);
        self
    }

    /// The same client without the elicitation capability.
    pub fn without_elicitation(mut self) -> Self {
        self.config.capabilities.elicitation = None;
        self
    }

    fn record(&self, event: ClientEvent) {
        // The test may have stopped listening; that is fine.
        let _ = self.events.send(event);
    }
}

#[allow(deprecated)] // logging notifications: rmcp marks them deprecated (SEP-2577).
impl rmcp::ClientHandler for RecordingClient {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let message = serde_json::to_value(&request)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_owned))
            .unwrap_or_default();
        self.record(ClientEvent::Elicited(message));
        let result = match &self.answer {
            Some(content) => rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(content.clone()),
            None => rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Decline),
        };
        Ok(result)
    }

    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        self.record(ClientEvent::Log(level, params.data));
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.record(ClientEvent::Progress(
            params.progress,
            params.total,
            params.message,
        ));
    }

    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.record(ClientEvent::ToolsChanged);
    }

    async fn on_resource_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.record(ClientEvent::ResourcesChanged);
    }

    async fn on_prompt_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.record(ClientEvent::PromptsChanged);
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.record(ClientEvent::ResourceUpdated(params.uri));
    }
}

/// Connects an rmcp client over `transport` in the given era.
///
/// ```no_run
/// # async fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
/// use ferrymcp_test_helpers::client::{Lifecycle, connect};
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
    pub server: JoinHandle<Result<(), ferrymcp_core::ServerError>>,
}

/// Serves `server` (started, like over stdio) on one end of a duplex and connects a client
/// to the other, in the given era.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use ferrymcp_test_helpers::client::{Lifecycle, in_memory};
/// let server = ferrymcp_core::Server::new("s");
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

/// Serves `server` on one end of a duplex and connects a [`RecordingClient`] (no tasks) to
/// the other, in the given era: the client, and the events it records.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use ferrymcp_test_helpers::client::{Lifecycle, recording_in_memory};
/// let (client, _events) = recording_in_memory(ferrymcp_core::Server::new("s"), Lifecycle::Legacy)
///     .await
///     .unwrap();
/// client.cancel().await.unwrap();
/// # });
/// ```
pub async fn recording_in_memory(
    server: Server,
    lifecycle: Lifecycle,
) -> Result<
    (
        RunningService<RoleClient, RecordingClient>,
        tokio::sync::mpsc::UnboundedReceiver<ClientEvent>,
    ),
    ClientInitializeError,
> {
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_end);
    tokio::spawn(server.serve_io(read, write));
    let (handler, events) = RecordingClient::new(false);
    let client = connect_with(handler, client_end, lifecycle).await?;
    Ok((client, events))
}
