//! The HTTP contract of the resource server (issue 13): RFC 9728 metadata, 401 and 403
//! challenges, tokens only from the header, every route covered, sessions bound to their
//! opener. The tokens here come from a verifier in the test; `auth_server.rs` runs the same
//! endpoint against a real authorization server.

use std::time::Duration;

use crate::support::modern::answered;
use ferrymcp::{
    Context, HttpConfig, HttpServer, MountOptions, Server, ToolDef,
    auth::{
        Principal, ResourceServer,
        verify::{TokenVerifier, Verified, VerifyError},
    },
};
use serde_json::{Value, json};

/// Tokens: `alice` (scope `read`), `bob` (scopes `read child`), `ops` (scope `mcp:admin`),
/// `expired`, `down` (the authorization server is unreachable).
struct Tokens;

#[async_trait::async_trait]
impl TokenVerifier for Tokens {
    async fn verify(&self, token: &str) -> Result<Verified, VerifyError> {
        let principal = |subject: &str, scopes: &[&str]| Verified {
            principal: Principal::new("app")
                .with_issuer("https://as.example")
                .with_subject(subject)
                .with_scopes(scopes.iter().copied()),
            expires_at: None,
        };
        match token {
            "alice" => Ok(principal("alice", &["read"])),
            "bob" => Ok(principal("bob", &["read", "child"])),
            "ops" => Ok(principal("ops", &["mcp:admin"])),
            "expired" => Err(VerifyError::Invalid("the token has expired".into())),
            "down" => Err(VerifyError::Unavailable(
                "the JWKS cannot be fetched".into(),
            )),
            _ => Err(VerifyError::Invalid("unknown token".into())),
        }
    }
}

/// A tool reporting who called it.
async fn whoami(cx: Context) -> String {
    match cx.scope().principal() {
        Some(p) => format!("{}:{}", p.client_id, p.subject.clone().unwrap_or_default()),
        None => "anonymous".to_owned(),
    }
}

struct Served {
    base: String,
    url: String,
    client: reqwest::Client,
    stop: tokio::sync::oneshot::Sender<()>,
    serving: tokio::task::JoinHandle<Result<(), ferrymcp::ServerError>>,
}

impl Served {
    /// The demo-like server behind a resource server whose public URI is `public` (None:
    /// the local URL itself).
    async fn start(public: Option<&str>) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let base = format!("http://127.0.0.1:{port}");
        let resource = public.map_or_else(|| format!("{base}/mcp"), str::to_owned);
        let rs = ResourceServer::new(&resource, Tokens)
            .expect("resource")
            .authorization_server("https://as.example")
            .expect("issuer")
            .scopes_supported(["read", "child"])
            .resource_name("auth test");
        let server = Server::new("auth-test");
        server
            .add_tool(ToolDef::new("whoami", whoami))
            .expect("tool");
        // A child that needs `child`, with a tool that also needs `write`.
        let child = Server::new("child");
        child
            .add_tool(ToolDef::new("echo", whoami))
            .expect("child tool");
        child
            .add_tool(ToolDef::new("erase", whoami).requires(["write"]))
            .expect("child tool");
        server
            .mount(
                &child,
                MountOptions::new().namespace("child").requires(["child"]),
            )
            .expect("mount");
        let http = HttpServer::bind(
            server,
            format!("127.0.0.1:{port}"),
            HttpConfig::new().auth(rs),
        )
        .await
        .expect("bind");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(http.run_until(async move {
            let _ = stopped.await;
        }));
        Self {
            url: format!("{base}/mcp"),
            base,
            client: reqwest::Client::new(),
            stop,
            serving,
        }
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.serving.await.expect("task").expect("clean stop");
    }

    /// A 2026-07-28 request with `token` (if any) as bearer.
    async fn post(
        &self,
        token: Option<&str>,
        method: &str,
        mut params: Value,
    ) -> reqwest::Response {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "auth-test", "version": "0"},
        });
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = params.get("name").and_then(Value::as_str) {
            request = request.header("mcp-name", name);
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.body(body.to_string()).send().await.expect("POST")
    }

    /// A 2025-11-25 `initialize` with `token`; the session id.
    async fn initialize_2025(&self, token: &str) -> String {
        let response = self
            .client
            .post(&self.url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "auth-test", "version": "0"}}})
                .to_string(),
            )
            .send()
            .await
            .expect("initialize");
        assert_eq!(response.status(), 200);
        response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned()
    }

    /// A 2025-11-25 `tools/list` in `session` with `token`.
    async fn list_2025(&self, token: &str, session: &str) -> reqwest::Response {
        self.client
            .post(&self.url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string())
            .send()
            .await
            .expect("tools/list")
    }
}

fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn au1_metadata_is_served_without_a_token_at_the_path_and_root_forms() {
    let served = Served::start(None).await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = served
            .client
            .get(format!("{}{path}", served.base))
            .send()
            .await
            .expect("GET metadata");
        assert_eq!(response.status(), 200, "{path}");
        let document: Value = response.json().await.expect("JSON");
        assert_eq!(document["resource"], served.url, "{path}");
        assert_eq!(
            document["authorization_servers"],
            json!(["https://as.example"])
        );
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
        assert_eq!(document["scopes_supported"], json!(["read", "child"]));
        assert_eq!(document["resource_name"], "auth test");
    }
    served.stop().await;
}

#[tokio::test]
async fn au2_a_server_behind_a_proxy_advertises_its_public_urls() {
    let served = Served::start(Some("HTTPS://Public.Example.com/api/mcp/")).await;
    let response = served.post(None, "tools/list", json!({})).await;
    assert_eq!(response.status(), 401);
    assert!(
        challenge(&response).contains(
            "resource_metadata=\"https://public.example.com/.well-known/oauth-protected-resource/api/mcp\""
        ),
        "{}",
        challenge(&response)
    );
    // Served at the public path form (as the proxy forwards it) and the local one.
    for path in [
        "/.well-known/oauth-protected-resource/api/mcp",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let document: Value = served
            .client
            .get(format!("{}{path}", served.base))
            .send()
            .await
            .expect("GET metadata")
            .json()
            .await
            .expect("JSON");
        assert_eq!(
            document["resource"], "https://public.example.com/api/mcp",
            "{path}"
        );
    }
    served.stop().await;
}

#[tokio::test]
async fn au3_a_request_without_a_token_gets_401_with_the_metadata_url_and_no_error() {
    let served = Served::start(None).await;
    let response = served.post(None, "tools/list", json!({})).await;
    assert_eq!(response.status(), 401);
    let challenge = challenge(&response);
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            served.base
        )),
        "{challenge}"
    );
    assert!(!challenge.contains("error="), "{challenge}");
    let body: Value = response.json().await.expect("a JSON-RPC error body");
    assert!(body["error"]["message"].is_string(), "{body}");
    // Another scheme is no bearer token either.
    let basic = served
        .client
        .post(&served.url)
        .header("authorization", "Basic YWxpY2U6cHc=")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("POST");
    assert_eq!(basic.status(), 401);
    assert!(!crate::auth_http::challenge(&basic).contains("error="));
    served.stop().await;
}

#[tokio::test]
async fn au4_an_invalid_token_gets_401_invalid_token() {
    let served = Served::start(None).await;
    for token in ["expired", "garbage", "not.a.jwt"] {
        let response = served.post(Some(token), "tools/list", json!({})).await;
        assert_eq!(response.status(), 401, "{token}");
        let challenge = challenge(&response);
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
        assert!(challenge.contains("resource_metadata=\""), "{challenge}");
        if token != "expired" {
            assert!(
                !challenge.contains(token),
                "the token is not echoed: {challenge}"
            );
        }
    }
    let response = served.post(Some("expired"), "tools/list", json!({})).await;
    assert!(challenge(&response).contains("the token has expired"));
    served.stop().await;
}

/// A `ping` posted to the endpoint with `query` in its URL, and `bearer` in the header.
async fn ping_with_query(served: &Served, query: &str, bearer: Option<&str>) -> reqwest::Response {
    let mut request = served
        .client
        .post(format!("{}?{query}", served.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    request
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())
        .send()
        .await
        .expect("POST")
}

#[tokio::test]
async fn au6_a_token_in_the_query_string_is_not_accepted() {
    let served = Served::start(None).await;
    let response = ping_with_query(&served, "access_token=alice", None).await;
    assert_eq!(response.status(), 401);
    let body: Value = response.json().await.expect("JSON");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Authorization header")),
        "{body}"
    );
    served.stop().await;
}

/// A token in the URL next to a valid one in the header is not served: one method only
/// (RFC 6750 §2), `400 invalid_request`.
#[tokio::test]
async fn au6_a_token_in_the_query_string_beside_the_header_is_a_bad_request() {
    let served = Served::start(None).await;
    let response = ping_with_query(&served, "x=1&access_token=alice", Some("alice")).await;
    assert_eq!(response.status(), 400);
    let challenge = challenge(&response);
    assert!(
        challenge.contains("error=\"invalid_request\""),
        "{challenge}"
    );
    assert!(challenge.contains("resource_metadata=\""), "{challenge}");
    let body: Value = response.json().await.expect("JSON");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("header only") && !m.contains("alice")),
        "{body}"
    );
    // The same token in the header alone is served.
    let response = served.post(Some("alice"), "tools/list", json!({})).await;
    assert_eq!(response.status(), 200);
    served.stop().await;
}

#[tokio::test]
async fn au8_every_route_of_the_endpoint_needs_a_token() {
    let served = Served::start(None).await;
    let get = served
        .client
        .get(&served.url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("GET");
    assert_eq!(get.status(), 401);
    let delete = served
        .client
        .delete(&served.url)
        .header("mcp-session-id", "anything")
        .send()
        .await
        .expect("DELETE");
    assert_eq!(delete.status(), 401);
    served.stop().await;
}

#[tokio::test]
async fn au8_a_session_belongs_to_the_principal_that_opened_it() {
    let served = Served::start(None).await;
    let session = served.initialize_2025("alice").await;
    let own = served.list_2025("alice", &session).await;
    assert_eq!(own.status(), 200);
    // Another principal's session is unknown to it: the same answer, to the byte.
    let stolen = answered(served.list_2025("bob", &session).await).await;
    let unknown = answered(served.list_2025("bob", "no-such-session").await).await;
    assert_eq!(stolen.0, 404);
    assert_eq!(stolen, unknown);
    assert_eq!(stolen.1, "application/json", "{stolen:?}");
    // Nor may bob end it, and his attempt is answered as for a session that does not exist.
    let delete = |session: String| {
        served
            .client
            .delete(&served.url)
            .bearer_auth("bob")
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
    };
    let stolen = answered(delete(session.clone()).await.expect("DELETE")).await;
    let unknown = answered(delete("no-such-session".to_owned()).await.expect("DELETE")).await;
    assert_eq!(stolen.0, 404);
    assert_eq!(stolen, unknown);
    assert_eq!(served.list_2025("alice", &session).await.status(), 200);
    served.stop().await;
}

#[tokio::test]
async fn au9_the_verified_principal_reaches_the_tool() {
    let served = Served::start(None).await;
    let response = served
        .post(
            Some("alice"),
            "tools/call",
            json!({"name": "whoami", "arguments": {}}),
        )
        .await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.expect("JSON");
    assert_eq!(
        answer["result"]["content"][0]["text"], "app:alice",
        "{answer}"
    );
    served.stop().await;
}

#[tokio::test]
async fn au7_insufficient_scope_gets_403_naming_every_scope_the_operation_needs() {
    let served = Served::start(None).await;
    let call = |name: &str| json!({"name": name, "arguments": {}});
    // alice has only `read`: the mount's scope is missing.
    let response = served
        .post(Some("alice"), "tools/call", call("child_echo"))
        .await;
    assert_eq!(response.status(), 403);
    let challenge = challenge(&response);
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"child\""), "{challenge}");
    assert!(challenge.contains("resource_metadata=\""), "{challenge}");
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["id"], 1, "the error answers the request: {body}");
    // Mount and tool together, in one challenge.
    let response = served
        .post(Some("alice"), "tools/call", call("child_erase"))
        .await;
    assert_eq!(response.status(), 403);
    assert!(
        crate::auth_http::challenge(&response).contains("scope=\"child write\""),
        "{}",
        crate::auth_http::challenge(&response)
    );
    // bob has `child`: the echo runs, the eraser still needs `write`.
    let response = served
        .post(Some("bob"), "tools/call", call("child_echo"))
        .await;
    assert_eq!(response.status(), 200);
    let response = served
        .post(Some("bob"), "tools/call", call("child_erase"))
        .await;
    assert_eq!(response.status(), 403);
    assert!(crate::auth_http::challenge(&response).contains("scope=\"child write\""));
    // The root's tool needs only a valid token.
    let response = served
        .post(Some("alice"), "tools/call", call("whoami"))
        .await;
    assert_eq!(response.status(), 200);
    served.stop().await;
}

#[tokio::test]
async fn au7_the_2025_wire_is_authorized_from_the_body() {
    let served = Served::start(None).await;
    let session = served.initialize_2025("alice").await;
    let response = served
        .client
        .post(&served.url)
        .bearer_auth("alice")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(
            json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                   "params": {"name": "child_echo", "arguments": {}}})
            .to_string(),
        )
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), 403);
    assert!(challenge(&response).contains("scope=\"child\""));
    served.stop().await;
}

#[tokio::test]
async fn au18_what_a_caller_may_not_use_is_left_out_of_its_listing() {
    let served = Served::start(None).await;
    let names = |answer: &Value| -> Vec<String> {
        answer["result"]["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let alice: Value = served
        .post(Some("alice"), "tools/list", json!({}))
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(names(&alice), ["whoami"], "{alice}");
    let bob: Value = served
        .post(Some("bob"), "tools/list", json!({}))
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(names(&bob), ["whoami", "child_echo"], "{bob}");
    served.stop().await;
}

#[tokio::test]
async fn an_unreachable_authorization_server_gets_503_with_retry_after() {
    let served = Served::start(None).await;
    let response = served.post(Some("down"), "tools/list", json!({})).await;
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
    served.stop().await;
}

#[tokio::test]
async fn without_auth_the_endpoint_is_open_and_serves_no_metadata() {
    let server = Server::new("open");
    let http = HttpServer::bind(server, "127.0.0.1:0", HttpConfig::new())
        .await
        .expect("bind");
    let base = format!("http://{}", http.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(http.run_until(async move {
        let _ = stopped.await;
    }));
    let response = reqwest::Client::new()
        .get(format!("{base}/.well-known/oauth-protected-resource"))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("GET");
    assert_eq!(response.status(), 404);
    let _ = stop.send(());
    serving.await.expect("task").expect("clean stop");
}

/// Issue 18: the operators' routes sit behind the same resource server as the endpoint, and
/// need the operators' scope on top: no token 401, a token without `mcp:admin` 403 with an
/// `insufficient_scope` challenge, an operator's token the answer; a verifier that cannot
/// check tokens 503.
#[tokio::test]
async fn issue18_operator_routes_need_a_token_with_the_operators_scope() {
    use std::sync::Arc;

    use ferrymcp::tasks::{admin::Admin, backend::memory::MemoryBackend};

    let rs = ResourceServer::new("http://127.0.0.1/mcp", Tokens)
        .expect("resource")
        .authorization_server("https://as.example")
        .expect("issuer");
    let http = HttpServer::bind(
        Server::new("ops"),
        "127.0.0.1:0",
        HttpConfig::new().auth(rs),
    )
    .await
    .expect("bind")
    .merge_operator_routes(Admin::new(Arc::new(MemoryBackend::new())).router("/admin"));
    let status = format!("http://{}/admin/api/status", http.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(http.run_until(async move {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::new();
    let get = |token: Option<&'static str>| {
        let request = client.get(&status);
        let request = match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        async move { request.send().await.expect("an answer") }
    };

    let anonymous = get(None).await;
    assert_eq!(anonymous.status(), 401);
    assert!(anonymous.headers().contains_key("www-authenticate"));
    let reader = get(Some("alice")).await;
    assert_eq!(reader.status(), 403);
    let challenge = reader.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(challenge.contains("insufficient_scope"), "{challenge}");
    assert!(reader.text().await.unwrap().contains("mcp:admin"));
    assert_eq!(get(Some("expired")).await.status(), 401);
    assert_eq!(get(Some("down")).await.status(), 503);
    let operator = get(Some("ops")).await;
    assert_eq!(operator.status(), 200);
    let answer: Value = operator.json().await.unwrap();
    assert_eq!(answer["tasks"]["running"], 0, "{answer}");

    let _ = stop.send(());
    serving.await.expect("join").expect("served");
}
