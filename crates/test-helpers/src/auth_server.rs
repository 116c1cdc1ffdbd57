//! A real OAuth 2.1 authorization server for the auth suites: npm's `oidc-provider`, run by
//! `node .ci/auth-server/server.mjs` on a free loopback port, and a handle to get tokens from it.
//!
//! [`AuthServer::start`] starts one (stopped when the handle is dropped);
//! [`AuthServer::shared`] is the one of the whole test process. The server issues
//!
//! * JWT access tokens (`typ: at+jwt`, RS256, `aud` = the requested resource, `scope`,
//!   `client_id`, `sub` = the client) to [`CLIENT_A`] and [`CLIENT_B`] ([`AuthServer::token`]),
//! * opaque access tokens for the same resources to [`OPAQUE_A`] and [`OPAQUE_B`]
//!   ([`AuthServer::opaque_token`]), which the resource server client [`RS_CLIENT`] can
//!   introspect ([`AuthServer::introspect`]),
//! * RFC 8693 token exchange to any client ([`AuthServer::exchange`]),
//!
//! through client credentials, for any resource `http://127.0.0.1:*` or `http://localhost:*`
//! (anything else is `invalid_target`) and the scopes [`SCOPES`], with a lifetime of 300 s.
//! [`AuthServer::mint`] signs any claims with the server's real key (expired, wrong audience,
//! wrong issuer...), [`AuthServer::rotate_key`] publishes and switches to a new key, and
//! [`AuthServer::counters`] counts the JWKS and introspection requests.
//!
//! The packages come from `bash .ci/setup`, which installs them into `target/auth-server`
//! (`FERRYMCP_AUTH_SERVER_DIR` names another folder). Without `node` or without them, starting
//! **fails** with a message saying so: the auth suites never skip.
//!
//! ```no_run
//! # async fn run() {
//! use ferrymcp_test_helpers::auth_server::{AuthServer, jwt_parts};
//! let auth = AuthServer::start().await;
//! let token = auth.token("client-a", "http://127.0.0.1:1/mcp", "read").await;
//! let (_header, claims) = jwt_parts(&token).unwrap();
//! assert_eq!(claims["aud"], "http://127.0.0.1:1/mcp");
//! # }
//! ```

use std::{
    collections::VecDeque,
    fmt,
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, Command, Stdio},
    sync::{Arc, Mutex, OnceLock, mpsc},
    time::Duration,
};

use base64::Engine as _;
use serde_json::{Value, json};

/// A client that gets JWT access tokens.
///
/// ```
/// assert_eq!(ferrymcp_test_helpers::auth_server::CLIENT_A, "client-a");
/// ```
pub const CLIENT_A: &str = "client-a";
/// [`CLIENT_A`]'s secret.
///
/// ```
/// assert_eq!(ferrymcp_test_helpers::auth_server::SECRET_A, "secret-a");
/// ```
pub const SECRET_A: &str = "secret-a";
/// A second client that gets JWT access tokens (another principal than [`CLIENT_A`]).
///
/// ```
/// assert_eq!(ferrymcp_test_helpers::auth_server::CLIENT_B, "client-b");
/// ```
pub const CLIENT_B: &str = "client-b";
/// [`CLIENT_B`]'s secret.
///
/// ```
/// assert_eq!(ferrymcp_test_helpers::auth_server::SECRET_B, "secret-b");
/// ```
pub const SECRET_B: &str = "secret-b";
/// A client that gets opaque access tokens (for introspection).
///
/// ```
/// assert_eq!(ferrymcp_test_helpers::auth_server::OPAQUE_A, "opaque-a");
/// ```
pub const OPAQUE_A: &str = "opaque-a";
/// [`OPAQUE_A`]'s secret.
///
/// ```
/// assert_eq!(ferrymcp_test_helpers::auth_server::OPAQUE_SECRET_A, "opaque-secret-a");
/// ```
pub const OPAQUE_SECRET_A: &str = "opaque-secret-a";
/// A second client that gets opaque access tokens.
///
/// ```
/// assert_eq!(ferrymcp_test_helpers::auth_server::OPAQUE_B, "opaque-b");
/// ```
pub const OPAQUE_B: &str = "opaque-b";
/// [`OPAQUE_B`]'s secret.
///
/// ```
/// assert_eq!(ferrymcp_test_helpers::auth_server::OPAQUE_SECRET_B, "opaque-secret-b");
/// ```
pub const OPAQUE_SECRET_B: &str = "opaque-secret-b";
/// The resource server's client: it may introspect any token.
///
/// ```
/// assert_eq!(ferrymcp_test_helpers::auth_server::RS_CLIENT, "rs");
/// ```
pub const RS_CLIENT: &str = "rs";
/// [`RS_CLIENT`]'s secret.
///
/// ```
/// assert_eq!(ferrymcp_test_helpers::auth_server::RS_SECRET, "rs-secret");
/// ```
pub const RS_SECRET: &str = "rs-secret";

/// Every client of the server with its secret. Each may use client credentials and token
/// exchange, with `client_secret_basic` or `client_secret_post`.
///
/// ```
/// use ferrymcp_test_helpers::auth_server::CLIENTS;
/// assert!(CLIENTS.contains(&("opaque-b", "opaque-secret-b")));
/// ```
pub const CLIENTS: &[(&str, &str)] = &[
    (CLIENT_A, SECRET_A),
    (CLIENT_B, SECRET_B),
    (OPAQUE_A, OPAQUE_SECRET_A),
    (OPAQUE_B, OPAQUE_SECRET_B),
    (RS_CLIENT, RS_SECRET),
];

/// The scopes any client may ask for (an empty scope is fine too).
///
/// ```
/// assert!(ferrymcp_test_helpers::auth_server::SCOPES.contains(&"files:read"));
/// ```
pub const SCOPES: &[&str] = &[
    "read",
    "write",
    "child",
    "admin",
    "files",
    "files:read",
    "tools",
];

/// The lifetime of the access tokens the server issues, in seconds.
///
/// ```
/// assert_eq!(ferrymcp_test_helpers::auth_server::ACCESS_TOKEN_TTL_SECS, 300);
/// ```
pub const ACCESS_TOKEN_TTL_SECS: u64 = 300;

/// The RFC 8693 token type of an access token (`subject_token_type`, `issued_token_type`).
///
/// ```
/// assert!(ferrymcp_test_helpers::auth_server::ACCESS_TOKEN_TYPE.ends_with(":access_token"));
/// ```
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// The RFC 8693 grant type.
///
/// ```
/// assert!(ferrymcp_test_helpers::auth_server::TOKEN_EXCHANGE_GRANT.ends_with(":token-exchange"));
/// ```
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// How long [`AuthServer::start`] waits for the server's readiness line.
///
/// ```
/// assert_eq!(ferrymcp_test_helpers::auth_server::READY_TIMEOUT.as_secs(), 30);
/// ```
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How to get the server, for failure messages.
///
/// ```
/// assert!(ferrymcp_test_helpers::auth_server::HOW_TO_GET_IT.contains("bash .ci/setup"));
/// ```
pub const HOW_TO_GET_IT: &str = "the auth suites need Node.js (20 or newer, `node` on PATH) and \
     npm's oidc-provider as .ci/auth-server/package-lock.json pins it, installed by \
     `bash .ci/setup` into target/auth-server (or FERRYMCP_AUTH_SERVER_DIR). These tests never skip.";

/// The secret of one of [`CLIENTS`], if `client` is one.
///
/// ```
/// assert_eq!(ferrymcp_test_helpers::auth_server::secret_of("client-b"), Some("secret-b"));
/// assert_eq!(ferrymcp_test_helpers::auth_server::secret_of("nobody"), None);
/// ```
pub fn secret_of(client: &str) -> Option<&'static str> {
    CLIENTS
        .iter()
        .find(|(id, _)| *id == client)
        .map(|(_, secret)| *secret)
}

/// A token endpoint's successful answer (RFC 6749 §5.1, RFC 8693 §2.2.1). Its `Debug` does
/// not show the token.
///
/// ```no_run
/// # async fn run(auth: ferrymcp_test_helpers::auth_server::AuthServer) {
/// let answer = auth
///     .client_credentials("client-a", "secret-a", Some("http://127.0.0.1:1/mcp"), "read write")
///     .await
///     .unwrap();
/// assert_eq!(answer.token_type, "Bearer");
/// assert_eq!(answer.scope.as_deref(), Some("read write"));
/// # }
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct TokenResponse {
    /// The access token.
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
    /// Seconds until the token expires.
    pub expires_in: Option<u64>,
    /// The granted scopes, space-separated (absent when none were granted).
    pub scope: Option<String>,
    /// For a token exchange: the type of the issued token ([`ACCESS_TOKEN_TYPE`]).
    pub issued_token_type: Option<String>,
}

impl fmt::Debug for TokenResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenResponse")
            .field("access_token", &"<redacted>")
            .field("token_type", &self.token_type)
            .field("expires_in", &self.expires_in)
            .field("scope", &self.scope)
            .field("issued_token_type", &self.issued_token_type)
            .finish()
    }
}

impl TokenResponse {
    fn from_json(body: &Value) -> Result<TokenResponse, String> {
        let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
        Ok(TokenResponse {
            access_token: text("access_token")
                .ok_or_else(|| format!("no access_token in the answer: {body}"))?,
            token_type: text("token_type")
                .ok_or_else(|| format!("no token_type in the answer: {body}"))?,
            expires_in: body.get("expires_in").and_then(Value::as_u64),
            scope: text("scope"),
            issued_token_type: text("issued_token_type"),
        })
    }
}

/// How often the server was asked for its keys and for introspection, since it started.
///
/// ```no_run
/// # async fn run(auth: ferrymcp_test_helpers::auth_server::AuthServer) {
/// let before = auth.counters().await;
/// // ... a resource server verifies a token ...
/// let after = auth.counters().await;
/// assert!(after.jwks <= before.jwks + 1);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// GET requests to the JWKS URI.
    pub jwks: u64,
    /// Requests to the introspection endpoint.
    pub introspection: u64,
}

/// A running authorization server: `node .ci/auth-server/server.mjs` on `127.0.0.1`, killed
/// when the handle is dropped (and exiting by itself when the test process ends).
///
/// ```no_run
/// # async fn run() {
/// let auth = ferrymcp_test_helpers::auth_server::AuthServer::start().await;
/// assert!(auth.issuer().starts_with("http://127.0.0.1:"));
/// drop(auth); // stops the server
/// # }
/// ```
pub struct AuthServer {
    issuer: String,
    http: reqwest::Client,
    child: Option<(Child, ChildStdin)>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl fmt::Debug for AuthServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthServer")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// How many lines of the server's stderr are kept for failure messages.
const STDERR_TAIL_LINES: usize = 60;

static SHARED: OnceLock<AuthServer> = OnceLock::new();

/// The workspace root: two levels above this crate.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

fn installed_dir() -> PathBuf {
    match std::env::var_os("FERRYMCP_AUTH_SERVER_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => workspace_root().join("target").join("auth-server"),
    }
}

impl AuthServer {
    /// Starts a server of one's own on a free loopback port and waits (at most
    /// [`READY_TIMEOUT`]) until it accepts connections. Panics, naming `.ci/setup`, when
    /// `node` or the installed packages are missing, and with the server's stderr when it
    /// does not come up.
    ///
    /// ```no_run
    /// # async fn run() {
    /// let auth = ferrymcp_test_helpers::auth_server::AuthServer::start().await;
    /// # drop(auth);
    /// # }
    /// ```
    pub async fn start() -> AuthServer {
        Self::start_from(installed_dir()).await
    }

    /// Like [`start`](Self::start), with the packages that `.ci/setup` installs taken from
    /// `dir` instead of `FERRYMCP_AUTH_SERVER_DIR` or `target/auth-server`.
    ///
    /// ```no_run
    /// # async fn run() {
    /// let auth = ferrymcp_test_helpers::auth_server::AuthServer::start_from("/opt/auth-server").await;
    /// # drop(auth);
    /// # }
    /// ```
    pub async fn start_from(dir: impl Into<PathBuf>) -> AuthServer {
        let dir = dir.into();
        match tokio::task::spawn_blocking(move || Self::start_blocking(dir)).await {
            Ok(server) => server,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(error) => panic!("starting the authorization server: {error}"),
        }
    }

    /// The server of this test process, started on first use and shared by its tests (each
    /// can use its own clients or resources to keep apart). It exits when the process does.
    /// Panics like [`start`](Self::start).
    ///
    /// ```no_run
    /// let auth = ferrymcp_test_helpers::auth_server::AuthServer::shared();
    /// assert!(auth.issuer().starts_with("http://127.0.0.1:"));
    /// ```
    pub fn shared() -> &'static AuthServer {
        SHARED.get_or_init(|| Self::start_blocking(installed_dir()))
    }

    fn start_blocking(dir: PathBuf) -> AuthServer {
        let root = workspace_root();
        let script = root.join(".ci").join("auth-server").join("server.mjs");
        let lock = root
            .join(".ci")
            .join("auth-server")
            .join("package-lock.json");
        let installed_package = dir.join("node_modules").join("oidc-provider");
        if !installed_package.join("package.json").is_file() {
            panic!(
                "oidc-provider is not installed in {}.\n{HOW_TO_GET_IT}",
                dir.display()
            );
        }
        let wanted =
            std::fs::read(&lock).unwrap_or_else(|e| panic!("cannot read {}: {e}", lock.display()));
        let have = std::fs::read(dir.join("package-lock.json")).unwrap_or_default();
        if wanted != have {
            panic!(
                "the packages in {} are not the ones {} pins: run `bash .ci/setup` again.\n{HOW_TO_GET_IT}",
                dir.display(),
                lock.display()
            );
        }

        let mut child = Command::new("node")
            .arg(&script)
            .env("PORT", "0")
            .env("FERRYMCP_AUTH_SERVER_DIR", &dir)
            .env("FERRYMCP_AUTH_SERVER_EXIT_WITH_STDIN", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run `node {}`: {e}.\n{HOW_TO_GET_IT}",
                    script.display()
                )
            });
        let stdin = child.stdin.take().expect("stdin was piped");
        let stdout = child.stdout.take().expect("stdout was piped");
        let stderr_pipe = child.stderr.take().expect("stderr was piped");

        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_reader = {
            let tail = Arc::clone(&stderr);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr_pipe).lines() {
                    let Ok(line) = line else { break };
                    let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                    if tail.len() == STDERR_TAIL_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            })
        };
        let (ready_tx, ready_rx) = mpsc::channel::<Result<String, String>>();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = match lines.next() {
                Some(Ok(line)) => match line.strip_prefix("listening ") {
                    Some(issuer) => Ok(issuer.trim().to_owned()),
                    None => Err(format!("unexpected first line on stdout: {line:?}")),
                },
                Some(Err(e)) => Err(format!("reading its stdout: {e}")),
                None => Err("it closed stdout without a readiness line".to_owned()),
            };
            let _ = ready_tx.send(first);
            // Drain whatever else comes, so the server never blocks on a full pipe.
            for _ in lines.by_ref() {}
        });

        let tail_of = |stderr: &Arc<Mutex<VecDeque<String>>>| {
            let tail = stderr.lock().unwrap_or_else(|e| e.into_inner());
            tail.iter().cloned().collect::<Vec<_>>().join("\n")
        };
        let issuer = match ready_rx.recv_timeout(READY_TIMEOUT) {
            Ok(Ok(issuer)) => issuer,
            outcome => {
                let why = match outcome {
                    Ok(Err(why)) => why,
                    _ => format!("no readiness line within {} s", READY_TIMEOUT.as_secs()),
                };
                let _ = child.kill();
                let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
                // The process is gone: its stderr ends, and then the tail is complete.
                let _ = stderr_reader.join();
                panic!(
                    "the authorization server (`node {}`) did not start: {why} (exit: {status}).\n\
                     --- its stderr ---\n{}\n---\n{HOW_TO_GET_IT}",
                    script.display(),
                    tail_of(&stderr)
                );
            }
        };
        let http = reqwest::Client::builder()
            // A connection per request: a shared server outlives each test's runtime.
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(30))
            .build()
            .expect("an HTTP client");
        AuthServer {
            issuer,
            http,
            child: Some((child, stdin)),
            stderr,
        }
    }

    /// The issuer: `http://127.0.0.1:<port>` (no trailing slash), as the tokens' `iss` and the
    /// discovery document say.
    ///
    /// ```no_run
    /// # fn run(auth: &ferrymcp_test_helpers::auth_server::AuthServer) {
    /// assert!(!auth.issuer().ends_with('/'));
    /// # }
    /// ```
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The OpenID discovery document's URL (`<issuer>/.well-known/openid-configuration`; the
    /// RFC 8414 `/.well-known/oauth-authorization-server` answers the same).
    ///
    /// ```no_run
    /// # fn run(auth: &ferrymcp_test_helpers::auth_server::AuthServer) {
    /// assert!(auth.discovery_url().ends_with("/.well-known/openid-configuration"));
    /// # }
    /// ```
    pub fn discovery_url(&self) -> String {
        format!("{}/.well-known/openid-configuration", self.issuer)
    }

    /// The JWKS URI (the discovery document's `jwks_uri`).
    ///
    /// ```no_run
    /// # fn run(auth: &ferrymcp_test_helpers::auth_server::AuthServer) {
    /// assert!(auth.jwks_uri().ends_with("/jwks"));
    /// # }
    /// ```
    pub fn jwks_uri(&self) -> String {
        format!("{}/jwks", self.issuer)
    }

    /// The token endpoint.
    ///
    /// ```no_run
    /// # fn run(auth: &ferrymcp_test_helpers::auth_server::AuthServer) {
    /// assert!(auth.token_endpoint().ends_with("/token"));
    /// # }
    /// ```
    pub fn token_endpoint(&self) -> String {
        format!("{}/token", self.issuer)
    }

    /// The RFC 7662 introspection endpoint.
    ///
    /// ```no_run
    /// # fn run(auth: &ferrymcp_test_helpers::auth_server::AuthServer) {
    /// assert!(auth.introspection_endpoint().ends_with("/token/introspection"));
    /// # }
    /// ```
    pub fn introspection_endpoint(&self) -> String {
        format!("{}/token/introspection", self.issuer)
    }

    /// The last lines the server wrote on stderr (why it refused a grant, for one), for
    /// failure messages.
    ///
    /// ```no_run
    /// # fn run(auth: &ferrymcp_test_helpers::auth_server::AuthServer) {
    /// eprintln!("{}", auth.stderr_tail());
    /// # }
    /// ```
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        tail.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Posts a form to the token endpoint as `client` (`client_secret_basic`); the JSON answer
    /// on success, the status and body otherwise.
    async fn post_token(
        &self,
        client: &str,
        secret: &str,
        form: &[(&str, &str)],
    ) -> Result<TokenResponse, String> {
        let response = self
            .http
            .post(self.token_endpoint())
            .basic_auth(client, Some(secret))
            .form(form)
            .send()
            .await
            .map_err(|e| format!("POST {}: {e}", self.token_endpoint()))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| format!("reading the token endpoint's answer: {e}"))?;
        if !status.is_success() {
            return Err(format!("{status}: {text}"));
        }
        let body: Value = serde_json::from_str(&text)
            .map_err(|e| format!("the token endpoint's answer is not JSON ({e}): {text}"))?;
        TokenResponse::from_json(&body)
    }

    /// A client-credentials grant: `client`/`secret` ask for `scope` (space-separated, may be
    /// empty) for `resource` (RFC 8707; `None` asks for none, which gives an opaque token
    /// without audience). `Err` carries the server's status and error body, e.g.
    /// `400 Bad Request: {"error":"invalid_target",...}`.
    ///
    /// ```no_run
    /// # async fn run(auth: ferrymcp_test_helpers::auth_server::AuthServer) {
    /// let refused = auth
    ///     .client_credentials("client-a", "secret-a", Some("https://example.com/"), "read")
    ///     .await
    ///     .unwrap_err();
    /// assert!(refused.contains("invalid_target"), "{refused}");
    /// # }
    /// ```
    pub async fn client_credentials(
        &self,
        client: &str,
        secret: &str,
        resource: Option<&str>,
        scope: &str,
    ) -> Result<TokenResponse, String> {
        let mut form = vec![("grant_type", "client_credentials")];
        if let Some(resource) = resource {
            form.push(("resource", resource));
        }
        if !scope.is_empty() {
            form.push(("scope", scope));
        }
        self.post_token(client, secret, &form).await
    }

    /// A JWT access token for [`CLIENT_A`] or [`CLIENT_B`] (any of [`CLIENTS`] works; the
    /// secret is looked up) with `aud` = `resource` and `scope`. Panics with the server's
    /// answer on failure.
    ///
    /// ```no_run
    /// # async fn run(auth: ferrymcp_test_helpers::auth_server::AuthServer) {
    /// let token = auth.token("client-b", "http://127.0.0.1:8080/mcp", "read child").await;
    /// # drop(token);
    /// # }
    /// ```
    pub async fn token(&self, client: &str, resource: &str, scope: &str) -> String {
        let secret = secret_of(client)
            .unwrap_or_else(|| panic!("{client} is not a client of the authorization server"));
        match self
            .client_credentials(client, secret, Some(resource), scope)
            .await
        {
            Ok(answer) => answer.access_token,
            Err(error) => panic!(
                "no token for {client} (resource {resource}, scope {scope:?}): {error}\n{}",
                self.stderr_tail()
            ),
        }
    }

    /// An opaque access token for [`OPAQUE_A`] or [`OPAQUE_B`] for `resource` and `scope`.
    /// Panics with the server's answer on failure, and when `client` gets JWTs instead.
    ///
    /// ```no_run
    /// # async fn run(auth: ferrymcp_test_helpers::auth_server::AuthServer) {
    /// let token = auth.opaque_token("opaque-a", "http://127.0.0.1:8080/mcp", "read").await;
    /// assert_eq!(token.matches('.').count(), 0);
    /// # }
    /// ```
    pub async fn opaque_token(&self, client: &str, resource: &str, scope: &str) -> String {
        let token = self.token(client, resource, scope).await;
        assert!(
            jwt_parts(&token).is_err(),
            "{client} got a JWT, not an opaque token: use opaque-a or opaque-b"
        );
        token
    }

    /// RFC 8693 token exchange: `client`/`secret` trade `subject_token` (a token of this
    /// server) for a JWT with `aud` = `resource`, the subject's `sub`, `act.sub` = `client`,
    /// and the scopes of `scope` the subject token had (all of them for an empty `scope`).
    /// `Err` carries the server's status and error body (`invalid_grant` for a bad subject
    /// token).
    ///
    /// ```no_run
    /// # async fn run(auth: ferrymcp_test_helpers::auth_server::AuthServer) {
    /// let caller = auth.token("client-a", "http://127.0.0.1:1/mcp", "read write").await;
    /// let upstream = auth
    ///     .exchange("client-b", "secret-b", &caller, "http://127.0.0.1:2/mcp", "read")
    ///     .await
    ///     .unwrap();
    /// assert_eq!(upstream.scope.as_deref(), Some("read"));
    /// # }
    /// ```
    pub async fn exchange(
        &self,
        client: &str,
        secret: &str,
        subject_token: &str,
        resource: &str,
        scope: &str,
    ) -> Result<TokenResponse, String> {
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT),
            ("subject_token", subject_token),
            ("subject_token_type", ACCESS_TOKEN_TYPE),
            ("resource", resource),
        ];
        if !scope.is_empty() {
            form.push(("scope", scope));
        }
        self.post_token(client, secret, &form).await
    }

    /// RFC 7662 introspection of `token` as [`RS_CLIENT`]: the server's JSON answer
    /// (`active`, and for an active token `aud`, `scope`, `client_id`, `sub`, `exp`, `iss`,
    /// `token_type`). A JWT is answered `unsupported_token_type` (it is for local
    /// verification). Panics when the server cannot be reached.
    ///
    /// ```no_run
    /// # async fn run(auth: ferrymcp_test_helpers::auth_server::AuthServer) {
    /// let token = auth.opaque_token("opaque-a", "http://127.0.0.1:1/mcp", "read").await;
    /// let answer = auth.introspect(&token).await;
    /// assert_eq!(answer["active"], true);
    /// # }
    /// ```
    pub async fn introspect(&self, token: &str) -> Value {
        let response = self
            .http
            .post(self.introspection_endpoint())
            .basic_auth(RS_CLIENT, Some(RS_SECRET))
            .form(&[("token", token)])
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {}: {e}", self.introspection_endpoint()));
        let text = response.text().await.unwrap_or_default();
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("the introspection answer is not JSON ({e}): {text}"))
    }

    /// Signs `claims`, exactly as given, with the server's real signing key: a token with a
    /// valid signature and whatever else a test needs (expired, not yet valid, another
    /// audience or issuer, no `exp`...). The header defaults to `{"alg": "RS256", "kid":
    /// <the key's kid>, "typ": "at+jwt"}`; fields of `header` replace those or add to them.
    /// The signature is RS256 whatever `alg` says, except for `"alg": "none"`, which gets an
    /// empty signature. Panics on failure.
    ///
    /// ```no_run
    /// # async fn run(auth: ferrymcp_test_helpers::auth_server::AuthServer) {
    /// use serde_json::json;
    /// let expired = auth
    ///     .mint(
    ///         json!({}),
    ///         json!({"iss": auth.issuer(), "aud": "http://127.0.0.1:1/mcp", "sub": "x", "exp": 1}),
    ///     )
    ///     .await;
    /// # drop(expired);
    /// # }
    /// ```
    pub async fn mint(&self, header: Value, claims: Value) -> String {
        let url = format!("{}/test/mint", self.issuer);
        let response = self
            .http
            .post(&url)
            .json(&json!({"header": header, "claims": claims}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {url}: {e}"));
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        match body.get("token").and_then(Value::as_str) {
            Some(token) if status.is_success() => token.to_owned(),
            _ => panic!("{url} answered {status}: {text}"),
        }
    }

    /// Rotates the signing key: a second key appears in the JWKS (the first stays there) and
    /// signs every token from now on. Returns the new key's `kid`. A server rotates once;
    /// a second call panics.
    ///
    /// ```no_run
    /// # async fn run(auth: ferrymcp_test_helpers::auth_server::AuthServer) {
    /// use ferrymcp_test_helpers::auth_server::jwt_parts;
    /// let kid = auth.rotate_key().await;
    /// let token = auth.token("client-a", "http://127.0.0.1:1/mcp", "read").await;
    /// assert_eq!(jwt_parts(&token).unwrap().0["kid"], kid.as_str());
    /// # }
    /// ```
    pub async fn rotate_key(&self) -> String {
        let url = format!("{}/test/rotate", self.issuer);
        let response = self
            .http
            .post(&url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {url}: {e}"));
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        match body.get("kid").and_then(Value::as_str) {
            Some(kid) if status.is_success() => kid.to_owned(),
            _ => panic!("{url} answered {status}: {text}"),
        }
    }

    /// The server's request counters: GETs of the JWKS and introspection requests so far.
    ///
    /// ```no_run
    /// # async fn run(auth: ferrymcp_test_helpers::auth_server::AuthServer) {
    /// let counters = auth.counters().await;
    /// assert_eq!(counters.introspection, 0);
    /// # }
    /// ```
    pub async fn counters(&self) -> Counters {
        let url = format!("{}/test/counters", self.issuer);
        let text = self
            .http
            .get(&url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"))
            .text()
            .await
            .unwrap_or_default();
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        match (
            body.get("jwks").and_then(Value::as_u64),
            body.get("introspection").and_then(Value::as_u64),
        ) {
            (Some(jwks), Some(introspection)) => Counters {
                jwks,
                introspection,
            },
            _ => panic!("{url} answered {text:?}"),
        }
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.child.take() {
            drop(stdin);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The header and claims of a compact JWS, decoded (base64url, JSON) but not verified. `Err`
/// says what is not a JWT about `token` (an opaque token, say).
///
/// ```
/// use ferrymcp_test_helpers::auth_server::jwt_parts;
/// // {"alg":"none"} . {"sub":"x"} . (no signature)
/// let (header, claims) = jwt_parts("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.").unwrap();
/// assert_eq!(header["alg"], "none");
/// assert_eq!(claims["sub"], "x");
/// assert!(jwt_parts("opaque").is_err());
/// ```
pub fn jwt_parts(token: &str) -> Result<(Value, Value), String> {
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return Err(format!(
            "a JWS has 3 dot-separated parts, this has {}",
            parts.len()
        ));
    }
    let decode = |part: &str, what: &str| -> Result<Value, String> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|e| format!("the {what} is not base64url: {e}"))?;
        serde_json::from_slice(&bytes).map_err(|e| format!("the {what} is not JSON: {e}"))
    };
    Ok((decode(parts[0], "header")?, decode(parts[1], "claims")?))
}
