//! The gateway: one MCP endpoint aggregating upstreams listed in a config file.
//!
//! ```toml
//! name = "gateway"                      # optional
//!
//! [tasks]                               # optional: local tasks (and a fixed task id key)
//! url = "memory://"                     # a TasksConfig URL (redis:// where supported)
//! key_env = "GATEWAY_TASK_KEY"          # optional: ids stay valid across restarts/replicas
//!
//! [[upstream]]
//! namespace = "demo"
//! command = "target/debug/examples/demo"
//! args = ["--stdio"]
//! env = { RUST_LOG = "warn" }         # the child gets only these, the base set
//! inherit_env = ["DEMO_CONFIG"]        # (ferrymcp_proxy::BASE_ENV) and the ones named here
//!
//! [[upstream]]
//! namespace = "api"
//! url = "https://mcp.internal:8443/mcp"
//! ca_file = "/etc/mcp/internal-ca.pem"  # optional: trusted instead of the built-in roots
//! headers = { "X-Team" = "search" }
//! forward_headers = ["X-Request-Id"]    # client headers passed on (none by default;
//!                                       # never Authorization)
//! call_timeout_ms = 30000
//! relist_after_ms = 0                   # how old a listing may be before a list reads it
//!                                       # again (every list reads it by default)
//! max_message_bytes = 16777216          # the largest answer or stdio line (16 MiB)
//! task_modes = { slow_report = "optional" }   # local tasks for a tool of a task-less upstream
//!
//! [upstream.auth]                       # optional: the upstream's own credentials
//! type = "client_credentials"           # or "bearer" (token_env) or "token_exchange"
//! token_url = "https://as.internal/token"
//! client_id = "gateway"
//! client_secret_env = "GATEWAY_CLIENT_SECRET"   # secrets only from the environment
//! scope = "files:read"                  # optional
//! resource = "https://mcp.internal:8443/mcp"    # optional: the upstream's url by default
//! ```
//!
//! `[upstream.auth]` takes `type = "bearer"` with `token_env` (what `bearer_env` is short
//! for), `type = "client_credentials"` (a token of the gateway's own, fetched and refreshed)
//! or `type = "token_exchange"` (each caller's verified token exchanged, RFC 8693, for one
//! meant for the upstream), both with `token_url`, `client_id`, `client_secret_env` and
//! optionally `scope`, `resource`, `audience`, `timeout_ms` (10000), `max_response_bytes`
//! (65536) and `max_cached_tokens` (1024). A secret written in the file (`token`,
//! `client_secret`) is refused, and so is `forward_authorization`: a caller's token never
//! reaches an upstream. See [`crate::upstream_auth`].
//!
//! A `url` upstream that is down when the gateway starts is mounted once it answers; until
//! then the gateway serves the others.
//!
//! Task passthrough (`ProxyTasks`) is always on: upstreams that advertise
//! `io.modelcontextprotocol/tasks` get opted-in calls forwarded with the opt-in. Without
//! `key_env` the proxy task ids are signed with a random key of this process, so they stop
//! working at a restart and on other replicas; [`GatewayConfig::build`] logs a warning saying
//! so.

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use ferrymcp_core::{Server, WeakServer};
use serde::Deserialize;

pub use crate::front_auth::{AuthSection, IntrospectionSection};
use crate::{
    CommandTarget, HeaderPolicy, HttpTarget, ProxyError, ProxyServer, ProxyTasks, Upstream,
    UpstreamOptions,
    task_ids::{TaskIdError, TaskIdSigner},
};

/// A gateway configuration file.
///
/// ```
/// let config = ferrymcp_proxy::gateway::GatewayConfig::from_toml(r#"
///     [[upstream]]
///     namespace = "demo"
///     command = "demo"
///     args = ["--stdio"]
/// "#).unwrap();
/// assert_eq!(config.upstream[0].namespace, "demo");
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// The gateway server's name (`gateway`).
    #[serde(default = "default_name")]
    pub name: String,
    /// Local tasks, when present.
    #[serde(default)]
    pub tasks: Option<TasksSection>,
    /// The HTTP front as an OAuth resource server (`[auth]`, see [`AuthSection`]): it puts
    /// each caller's principal and token into the request, so `type = "token_exchange"`
    /// upstreams have a token to exchange.
    #[serde(default)]
    pub auth: Option<AuthSection>,
    /// The upstreams, each mounted under its namespace.
    #[serde(default)]
    pub upstream: Vec<UpstreamConfig>,
}

fn default_name() -> String {
    "gateway".to_owned()
}

/// The `[tasks]` section.
///
/// ```
/// let s: ferrymcp_proxy::gateway::TasksSection = toml::from_str(r#"url = "memory://""#).unwrap();
/// assert_eq!(s.url.as_deref(), Some("memory://"));
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksSection {
    /// The task backend URL (`memory://` by default).
    pub url: Option<String>,
    /// The environment variable holding the task id key (at least 16 bytes); a random key
    /// per process when absent.
    pub key_env: Option<String>,
}

/// One `[[upstream]]`: a namespace and either `command` or `url`.
///
/// ```
/// let u: ferrymcp_proxy::gateway::UpstreamConfig = toml::from_str(r#"
///     namespace = "api"
///     url = "http://127.0.0.1:8001/mcp"
/// "#).unwrap();
/// assert!(u.command.is_none());
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// The namespace its tools get (`<namespace>_<tool>`); empty for none.
    pub namespace: String,
    /// A program speaking MCP over stdio.
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables set for it. It does not inherit the gateway's environment,
    /// only [`BASE_ENV`](crate::BASE_ENV), these and `inherit_env`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Variables of the gateway's environment passed through to it by name.
    #[serde(default)]
    pub inherit_env: Vec<String>,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// A Streamable HTTP URL (`http://` or `https://`).
    pub url: Option<String>,
    /// A PEM file of CA certificates trusted for the `https://` URL instead of the built-in
    /// webpki roots.
    pub ca_file: Option<PathBuf>,
    /// Headers sent to the URL on every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The environment variable holding a bearer token for the URL (short for
    /// `[upstream.auth]` with `type = "bearer"`).
    pub bearer_env: Option<String>,
    /// The URL's credentials (`[upstream.auth]`).
    pub auth: Option<AuthConfig>,
    /// Client headers forwarded to the URL, by name (none by default; `Authorization` is
    /// refused).
    #[serde(default)]
    pub forward_headers: Vec<String>,
    /// Refused: a caller's `Authorization` is never forwarded.
    #[serde(default)]
    forward_authorization: Option<Refused>,
    /// The per-request timeout in milliseconds (60000).
    pub call_timeout_ms: Option<u64>,
    /// How old the gateway's copy of the upstream's tool, resource or prompt list may be, in
    /// milliseconds, before a client's list reads it again (0: every list does; see
    /// [`ProxyServer::relist_after`]).
    pub relist_after_ms: Option<u64>,
    /// The largest message the upstream may send, in bytes: a stdio line, a JSON body or an
    /// SSE event (16 MiB).
    pub max_message_bytes: Option<usize>,
    /// Task modes declared at the gateway, by upstream tool name (`"optional"`,
    /// `"required"`, `"forbidden"`): with `[tasks]`, opted-in calls of these tools run as
    /// local tasks when the upstream has no tasks of its own.
    #[serde(default)]
    pub task_modes: BTreeMap<String, ferrymcp_types::TaskSupport>,
}

/// A key the gateway refuses, kept only to say why (`Debug` never shows its value).
#[derive(Clone, Deserialize)]
#[serde(transparent)]
struct Refused(#[allow(dead_code)] toml::Value);

impl std::fmt::Debug for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<refused>")
    }
}

/// The kind of `[upstream.auth]`.
///
/// ```
/// let c: ferrymcp_proxy::gateway::AuthConfig = toml::from_str(r#"type = "bearer""#).unwrap();
/// assert_eq!(c.kind, ferrymcp_proxy::gateway::AuthKind::Bearer);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthKind {
    /// A static token from `token_env`.
    Bearer,
    /// OAuth client credentials.
    ClientCredentials,
    /// RFC 8693 token exchange of each caller's token.
    TokenExchange,
}

/// `[upstream.auth]`: an HTTP upstream's credentials. Secrets come from the environment
/// only; `Debug` shows the names of the variables, never their values.
///
/// ```
/// let c: ferrymcp_proxy::gateway::AuthConfig = toml::from_str(r#"
///     type = "token_exchange"
///     token_url = "https://as.internal/token"
///     client_id = "gateway"
///     client_secret_env = "GATEWAY_CLIENT_SECRET"
/// "#).unwrap();
/// assert_eq!(c.client_secret_env.as_deref(), Some("GATEWAY_CLIENT_SECRET"));
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// `bearer`, `client_credentials` or `token_exchange`.
    #[serde(rename = "type")]
    pub kind: AuthKind,
    /// `bearer`: the environment variable holding the token.
    pub token_env: Option<String>,
    /// The token endpoint.
    pub token_url: Option<String>,
    /// The gateway's client id there.
    pub client_id: Option<String>,
    /// The environment variable holding the client secret.
    pub client_secret_env: Option<String>,
    /// The scopes asked for (space-separated).
    pub scope: Option<String>,
    /// The RFC 8707 resource asked for (the upstream's `url` by default).
    pub resource: Option<String>,
    /// An RFC 8693 audience (`token_exchange`).
    pub audience: Option<String>,
    /// How long one token request may take, in milliseconds (10000).
    pub timeout_ms: Option<u64>,
    /// The largest token response read, in bytes (65536).
    pub max_response_bytes: Option<usize>,
    /// How many exchanged tokens are cached (1024).
    pub max_cached_tokens: Option<usize>,
    #[serde(default)]
    token: Option<Refused>,
    #[serde(default)]
    client_secret: Option<Refused>,
}

impl AuthConfig {
    /// The [`UpstreamAuth`](crate::upstream_auth::UpstreamAuth) this section describes,
    /// its secret read from the environment through `env`.
    ///
    /// ```
    /// let c: ferrymcp_proxy::gateway::AuthConfig = toml::from_str(r#"
    ///     type = "bearer"
    ///     token_env = "API_TOKEN"
    /// "#).unwrap();
    /// let auth = c.upstream_auth(|_| Some("s3cret".into())).unwrap();
    /// assert!(!format!("{auth:?}").contains("s3cret"));
    /// assert!(c.upstream_auth(|_| None).unwrap_err().contains("API_TOKEN"));
    /// ```
    pub fn upstream_auth(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<crate::upstream_auth::UpstreamAuth, String> {
        use crate::upstream_auth::{OAuthClient, UpstreamAuth};
        if self.token.is_some() {
            return Err("[upstream.auth] `token` is refused: a secret does not belong in the file; name the environment variable holding it with `token_env`".to_owned());
        }
        if self.client_secret.is_some() {
            return Err("[upstream.auth] `client_secret` is refused: a secret does not belong in the file; name the environment variable holding it with `client_secret_env`".to_owned());
        }
        let from_env = |key: &str, var: &Option<String>| -> Result<String, String> {
            let var = var
                .as_deref()
                .ok_or_else(|| format!("[upstream.auth] needs `{key}`"))?;
            env(var).ok_or_else(|| format!("the environment variable {var} is not set"))
        };
        let required = |key: &str, value: &Option<String>| -> Result<String, String> {
            value
                .clone()
                .ok_or_else(|| format!("[upstream.auth] needs `{key}`"))
        };
        let oauth_only = [
            ("token_url", self.token_url.is_some()),
            ("client_id", self.client_id.is_some()),
            ("client_secret_env", self.client_secret_env.is_some()),
            ("scope", self.scope.is_some()),
            ("resource", self.resource.is_some()),
            ("audience", self.audience.is_some()),
            ("timeout_ms", self.timeout_ms.is_some()),
            ("max_response_bytes", self.max_response_bytes.is_some()),
            ("max_cached_tokens", self.max_cached_tokens.is_some()),
        ];
        if self.kind == AuthKind::Bearer {
            if let Some((key, _)) = oauth_only.iter().find(|(_, set)| *set) {
                return Err(format!(
                    "[upstream.auth] `{key}` does not apply to type = \"bearer\""
                ));
            }
            return Ok(UpstreamAuth::Bearer(from_env(
                "token_env",
                &self.token_env,
            )?));
        }
        if self.token_env.is_some() {
            return Err("[upstream.auth] `token_env` applies to type = \"bearer\" only".to_owned());
        }
        if self.kind == AuthKind::ClientCredentials && self.audience.is_some() {
            return Err(
                "[upstream.auth] `audience` applies to type = \"token_exchange\" only".to_owned(),
            );
        }
        let mut client = OAuthClient::new(
            required("token_url", &self.token_url)?,
            required("client_id", &self.client_id)?,
            from_env("client_secret_env", &self.client_secret_env)?,
        );
        client.resource = self.resource.clone();
        client.audience = self.audience.clone();
        client.scope = self.scope.clone();
        if let Some(ms) = self.timeout_ms {
            client = client.timeout(Duration::from_millis(ms));
        }
        if let Some(bytes) = self.max_response_bytes {
            client = client.max_response_bytes(bytes);
        }
        if let Some(count) = self.max_cached_tokens {
            client = client.max_cached_tokens(count);
        }
        Ok(match self.kind {
            AuthKind::TokenExchange => UpstreamAuth::TokenExchange(client),
            _ => UpstreamAuth::ClientCredentials(client),
        })
    }
}

/// Why a gateway could not be built.
///
/// ```
/// let error = ferrymcp_proxy::gateway::GatewayConfig::from_toml("nonsense = 1").unwrap_err();
/// assert!(error.to_string().contains("config"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The file could not be read.
    #[error("reading the gateway config {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a valid config.
    #[error("invalid gateway config: {0}")]
    Parse(String),
    /// An upstream entry is inconsistent, or an environment variable is missing.
    #[error("upstream '{namespace}': {reason}")]
    Upstream {
        /// The entry's namespace.
        namespace: String,
        /// What is wrong.
        reason: String,
    },
    /// An upstream could not be reached or listed.
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    /// The task id key is unusable.
    #[error(transparent)]
    TaskIds(#[from] TaskIdError),
    /// The server refused a mount or an extension.
    #[error(transparent)]
    Server(#[from] ferrymcp_core::ServerError),
    /// The `[auth]` section is unusable.
    #[error("{0}")]
    Auth(String),
}

impl GatewayConfig {
    /// Parses a TOML config.
    ///
    /// ```
    /// let config = ferrymcp_proxy::gateway::GatewayConfig::from_toml("").unwrap();
    /// assert!(config.upstream.is_empty());
    /// ```
    pub fn from_toml(text: &str) -> Result<Self, GatewayError> {
        // The error quotes the line at fault, which may hold an upstream's URL.
        toml::from_str(text)
            .map_err(|e| GatewayError::Parse(crate::url_secrets::redact_urls(&e.to_string())))
    }

    /// The `HttpConfig` the HTTP front serves with: the `[auth]` resource server when the
    /// section is present.
    ///
    /// ```
    /// let config = ferrymcp_proxy::gateway::GatewayConfig::from_toml("").unwrap();
    /// assert!(config.http_config().is_ok());
    /// ```
    pub fn http_config(&self) -> Result<ferrymcp_core::HttpConfig, GatewayError> {
        let config = ferrymcp_core::HttpConfig::new();
        match &self.auth {
            Some(auth) => Ok(config.auth(auth.resource_server().map_err(GatewayError::Auth)?)),
            None => Ok(config),
        }
    }

    /// Reads and parses a TOML config file.
    ///
    /// ```
    /// assert!(ferrymcp_proxy::gateway::GatewayConfig::load("/nonexistent.toml").is_err());
    /// ```
    pub fn load(path: impl Into<PathBuf>) -> Result<Self, GatewayError> {
        let path = path.into();
        let text = std::fs::read_to_string(&path).map_err(|source| GatewayError::Read {
            path: path.clone(),
            source,
        })?;
        Self::from_toml(&text)
    }

    /// Connects every upstream and builds the aggregate server (not yet serving).
    ///
    /// A `url` upstream that cannot be reached does not stop the gateway: it serves the
    /// others, logs a warning, and mounts that upstream's components as soon as it answers
    /// (tried again after 250 ms, then twice as long each time, at most 30 s apart). An
    /// invalid entry, or a `command` that cannot be started, fails at once.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), ferrymcp_proxy::gateway::GatewayError> {
    /// let server = ferrymcp_proxy::gateway::GatewayConfig::load("gateway.toml")?.build().await?;
    /// server.serve_stdio().await.ok();
    /// # Ok(()) }
    /// ```
    pub async fn build(&self) -> Result<Server, GatewayError> {
        let root = Server::new(self.name.clone());
        let mut tasks = match self.tasks.as_ref().and_then(|t| t.key_env.as_deref()) {
            Some(var) => {
                let key = std::env::var(var).map_err(|_| GatewayError::Upstream {
                    namespace: "[tasks]".to_owned(),
                    reason: format!("the environment variable {var} is not set"),
                })?;
                ProxyTasks::with_signer(TaskIdSigner::new(key.as_bytes())?)
            }
            None => {
                tracing::warn!(
                    "no [tasks] key_env: passthrough task ids are signed with a random key of this \
                     process; they will not survive a restart or work across replicas (set \
                     key_env to a variable holding a key of at least 16 bytes)"
                );
                ProxyTasks::new()?
            }
        };
        if let Some(section) = &self.tasks {
            let config = ferrymcp_tasks::TasksConfig::from_env().with_url(
                section
                    .url
                    .clone()
                    .unwrap_or_else(|| "memory://".to_owned()),
            );
            tasks = tasks.with_local(ferrymcp_tasks::TasksExtension::with_config(config));
        }
        let mut waiting = Vec::new();
        for entry in &self.upstream {
            let upstream = entry.upstream()?;
            tasks.register(&upstream);
            match entry.proxy(&upstream).build().await {
                Ok(proxy) => root.mount(&proxy, entry.namespace.as_str())?,
                // A child process that cannot start is a deployment error; a remote
                // server may just be starting later.
                Err(error) if entry.command.is_some() || matches!(error, ProxyError::Config(_)) => {
                    return Err(error.into());
                }
                Err(error) => {
                    tracing::warn!(
                        upstream = %entry.namespace,
                        %error,
                        "upstream unreachable: serving without its components, mounting them once it answers"
                    );
                    waiting.push((entry.clone(), upstream));
                }
            }
        }
        root.add_extension(tasks)?;
        for (entry, upstream) in waiting {
            tokio::spawn(mount_when_reachable(root.downgrade(), entry, upstream));
        }
        Ok(root)
    }
}

/// The first wait before building an unreachable upstream's proxy again (each next one
/// doubles).
const MOUNT_RETRY_MIN: Duration = Duration::from_millis(250);
/// The longest wait between two attempts.
const MOUNT_RETRY_MAX: Duration = Duration::from_secs(30);

/// Builds `entry`'s proxy until its upstream answers, then mounts it on the gateway; ends
/// early when the gateway is gone.
async fn mount_when_reachable(root: WeakServer, entry: UpstreamConfig, upstream: Upstream) {
    let mut delay = MOUNT_RETRY_MIN;
    loop {
        tokio::time::sleep(crate::announcements::jittered(delay)).await;
        if root.upgrade().is_none() {
            return;
        }
        match entry.proxy(&upstream).build().await {
            Ok(proxy) => {
                let Some(root) = root.upgrade() else { return };
                match root.mount(&proxy, entry.namespace.as_str()) {
                    Ok(()) => {
                        tracing::info!(upstream = %entry.namespace, "upstream reachable: its components are mounted")
                    }
                    Err(error) => {
                        tracing::error!(upstream = %entry.namespace, %error, "cannot mount the upstream")
                    }
                }
                return;
            }
            Err(error @ ProxyError::Config(_)) => {
                tracing::error!(upstream = %entry.namespace, %error, "cannot proxy the upstream");
                return;
            }
            Err(error) => {
                tracing::warn!(upstream = %entry.namespace, %error, "upstream still unreachable");
            }
        }
        delay = (delay * 2).min(MOUNT_RETRY_MAX);
    }
}

impl UpstreamConfig {
    /// The proxy server of this entry over `upstream` (not yet connected).
    fn proxy(&self, upstream: &Upstream) -> ProxyServer {
        let mut proxy = ProxyServer::new(upstream.clone()).name(self.namespace.clone());
        if let Some(ms) = self.relist_after_ms {
            proxy = proxy.relist_after(Duration::from_millis(ms));
        }
        for (tool, mode) in &self.task_modes {
            proxy = proxy.task_mode(tool.clone(), *mode);
        }
        proxy
    }

    /// The [`Upstream`] this entry describes.
    ///
    /// ```
    /// let u: ferrymcp_proxy::gateway::UpstreamConfig = toml::from_str(r#"
    ///     namespace = "demo"
    ///     command = "demo"
    /// "#).unwrap();
    /// assert_eq!(u.upstream().unwrap().name(), "demo");
    /// ```
    pub fn upstream(&self) -> Result<Upstream, GatewayError> {
        let invalid = |reason: &str| GatewayError::Upstream {
            namespace: self.namespace.clone(),
            reason: reason.to_owned(),
        };
        if self.forward_authorization.is_some() {
            return Err(invalid(
                "`forward_authorization` is refused: a caller's token is never passed through to an upstream (the MCP spec forbids it); give the upstream a token of its own with `[upstream.auth]`, e.g. type = \"token_exchange\" to exchange each caller's token for one meant for the upstream",
            ));
        }
        let upstream = match (&self.command, &self.url) {
            (Some(command), None) => {
                if self.auth.is_some() || self.bearer_env.is_some() {
                    return Err(invalid(
                        "`[upstream.auth]` and `bearer_env` apply to a `url`, not a `command`",
                    ));
                }
                if self.ca_file.is_some() {
                    return Err(invalid("`ca_file` applies to a `url`, not a `command`"));
                }
                let mut target = CommandTarget::new(command.clone()).args(self.args.clone());
                target.env = self.env.clone();
                target.inherit = self.inherit_env.iter().cloned().collect();
                target.cwd = self.cwd.clone();
                Upstream::command(self.namespace.clone(), target)
            }
            (None, Some(url)) => {
                if !self.env.is_empty() || !self.inherit_env.is_empty() {
                    return Err(invalid(
                        "`env` and `inherit_env` apply to a `command`, not a `url`",
                    ));
                }
                let mut target = HttpTarget::new(url.clone());
                target.headers = self.headers.clone();
                if let Some(path) = &self.ca_file {
                    // Read now, so a bad file stops the gateway at start with its reason.
                    crate::tls::read_ca_file(path).map_err(|reason| invalid(&reason))?;
                    target = target.ca_file(path.clone());
                }
                let mut policy = HeaderPolicy::deny_all();
                for name in &self.forward_headers {
                    policy = policy.allow(name).map_err(|e| invalid(&e.to_string()))?;
                }
                target = target.forward_headers(policy);
                match (&self.bearer_env, &self.auth) {
                    (Some(_), Some(_)) => {
                        return Err(invalid(
                            "give either `bearer_env` or `[upstream.auth]`, not both",
                        ));
                    }
                    (Some(var), None) => {
                        let token = std::env::var(var).map_err(|_| {
                            invalid(&format!("the environment variable {var} is not set"))
                        })?;
                        target = target.bearer(token);
                    }
                    (None, Some(auth)) => {
                        target.auth = Some(
                            auth.upstream_auth(|var| std::env::var(var).ok())
                                .map_err(|reason| invalid(&reason))?,
                        );
                    }
                    (None, None) => {}
                }
                Upstream::http(self.namespace.clone(), target)
            }
            (Some(_), Some(_)) => return Err(invalid("give either `command` or `url`, not both")),
            (None, None) => return Err(invalid("give `command` or `url`")),
        };
        let mut options = UpstreamOptions::default();
        if let Some(ms) = self.call_timeout_ms {
            options = options.call_timeout(Duration::from_millis(ms));
        }
        if let Some(bytes) = self.max_message_bytes {
            options = options.max_message_bytes(bytes);
        }
        Ok(upstream.with_options(options))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_needs_exactly_one_of_command_and_url() {
        let both: UpstreamConfig =
            toml::from_str("namespace = \"x\"\ncommand = \"c\"\nurl = \"http://h/mcp\"").unwrap();
        assert!(
            both.upstream()
                .unwrap_err()
                .to_string()
                .contains("not both")
        );
        let neither: UpstreamConfig = toml::from_str("namespace = \"x\"").unwrap();
        assert!(neither.upstream().is_err());
    }

    #[test]
    fn the_example_config_parses() {
        let config = GatewayConfig::from_toml(include_str!("../gateway.example.toml")).unwrap();
        assert_eq!(config.upstream.len(), 2);
        assert!(config.upstream.iter().all(|u| u.upstream().is_ok()));
    }

    #[test]
    fn a_bad_ca_file_is_a_config_error_naming_the_file() {
        // issue 12, scope 3 (TLS): the gateway refuses to start on an unusable CA file.
        let dir = std::env::temp_dir().join(format!("ferrymcp-gateway-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let not_pem = dir.join("not-pem.pem");
        std::fs::write(&not_pem, "this is not a certificate\n").unwrap();
        for (path, expected) in [
            (dir.join("missing.pem"), "reading the CA file"),
            (not_pem, "no PEM CERTIFICATE block"),
        ] {
            let entry: UpstreamConfig = toml::from_str(&format!(
                "namespace = \"x\"\nurl = \"https://127.0.0.1:1/mcp\"\nca_file = {:?}",
                path.display().to_string()
            ))
            .unwrap();
            let error = entry.upstream().unwrap_err().to_string();
            assert!(error.contains("upstream 'x'"), "{error}");
            assert!(error.contains(expected), "{error}");
            assert!(error.contains(&path.display().to_string()), "{error}");
        }
    }

    #[test]
    fn child_environment_keys_are_refused_on_a_url_entry() {
        for key in ["inherit_env = [\"A\"]", "env = { A = \"1\" }"] {
            let entry: UpstreamConfig =
                toml::from_str(&format!("namespace = \"x\"\nurl = \"http://h/mcp\"\n{key}"))
                    .unwrap();
            let error = entry.upstream().unwrap_err().to_string();
            assert!(error.contains("apply to a `command`"), "{error}");
        }
    }

    #[test]
    fn au22_auth_sections_build_the_upstream_credentials() {
        use crate::upstream_auth::UpstreamAuth;
        let section = |text: &str| toml::from_str::<AuthConfig>(text).expect("parses");
        let env = |var: &str| (var == "SECRET").then(|| "s3cret".to_owned());
        let exchange = section(
            "type = \"token_exchange\"\ntoken_url = \"https://as/token\"\nclient_id = \"gw\"\nclient_secret_env = \"SECRET\"\naudience = \"files\"\ntimeout_ms = 2500",
        );
        match exchange.upstream_auth(env) {
            Ok(UpstreamAuth::TokenExchange(client)) => {
                assert_eq!(client.client_secret, "s3cret");
                assert_eq!(client.audience.as_deref(), Some("files"));
                assert_eq!(client.timeout, Duration::from_millis(2500));
                assert_eq!(client.max_cached_tokens, 1024);
            }
            other => panic!("{other:?}"),
        }
        for (text, expected) in [
            (
                "type = \"client_credentials\"\nclient_id = \"gw\"\nclient_secret_env = \"SECRET\"",
                "`token_url`",
            ),
            (
                "type = \"bearer\"\ntoken_env = \"SECRET\"\nscope = \"a\"",
                "`scope` does not apply",
            ),
            (
                "type = \"client_credentials\"\ntoken_url = \"u\"\nclient_id = \"gw\"\nclient_secret_env = \"SECRET\"\naudience = \"a\"",
                "`audience` applies",
            ),
        ] {
            let error = section(text).upstream_auth(env).expect_err(text);
            assert!(error.contains(expected), "{error}");
        }
        let both: UpstreamConfig = toml::from_str(
            "namespace = \"x\"\nurl = \"http://h/mcp\"\nbearer_env = \"A\"\n[auth]\ntype = \"bearer\"\ntoken_env = \"A\"",
        )
        .expect("parses");
        assert!(
            both.upstream()
                .unwrap_err()
                .to_string()
                .contains("not both")
        );
        let command: UpstreamConfig = toml::from_str(
            "namespace = \"x\"\ncommand = \"c\"\n[auth]\ntype = \"bearer\"\ntoken_env = \"A\"",
        )
        .expect("parses");
        assert!(
            command
                .upstream()
                .unwrap_err()
                .to_string()
                .contains("apply to a `url`")
        );
    }

    #[test]
    fn unknown_keys_are_refused() {
        let error =
            GatewayConfig::from_toml("[[upstream]]\nnamespace = \"x\"\nurll = \"u\"").unwrap_err();
        assert!(error.to_string().contains("urll"), "{error}");
    }
}
