//! `https://` upstreams (issue 12, scope 3, TLS): the proxy verifies the upstream's
//! certificate against its CA file (or the built-in webpki roots), against a real HTTPS
//! server on 127.0.0.1 whose CA the test generates.

use std::{net::SocketAddr, path::PathBuf, sync::Arc};

use ferrymcp_core::{Args, HttpConfig, Server, ToolDef, ToolError};
use ferrymcp_proxy::{HttpTarget, ProxyError, RequestOptions, Upstream};
use ferrymcp_types::CallToolResponse;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde::Deserialize;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, server::TlsStream};

#[derive(Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

/// A CA (PEM) and a server certificate it signed for `localhost` and `127.0.0.1`.
struct Pki {
    ca_pem: String,
    server_cert: CertificateDer<'static>,
    server_key: PrivateKeyDer<'static>,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    CertifiedIssuer::self_signed(params, KeyPair::generate().expect("CA key")).expect("CA")
}

fn pki() -> Pki {
    let ca = ca("ferrymcp test CA");
    let key = KeyPair::generate().expect("server key");
    let params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .expect("server params");
    let cert = params.signed_by(&key, &ca).expect("server cert");
    Pki {
        ca_pem: ca.pem(),
        server_cert: cert.der().clone(),
        server_key: PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
    }
}

/// A TCP listener handing axum TLS streams (failed handshakes are skipped).
struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, addr)) = self.tcp.accept().await else {
                continue;
            };
            if let Ok(tls) = self.acceptor.accept(stream).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// Serves an MCP server with the tool `add` over HTTPS on 127.0.0.1 (until the runtime ends).
async fn serve_https(pki: &Pki) -> SocketAddr {
    let server = Server::new("secure-upstream");
    server
        .add_tool(ToolDef::new(
            "add",
            |Args(Pair { a, b }): Args<Pair>| async move { Ok::<_, ToolError>(a + b) },
        ))
        .expect("add");
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![pki.server_cert.clone()], pki.server_key.clone_key())
        .expect("server TLS config");
    let tcp = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = tcp.local_addr().expect("addr");
    let listener = TlsListener {
        tcp,
        acceptor: TlsAcceptor::from(Arc::new(config)),
    };
    let router = server
        .http_router(&HttpConfig::new())
        .expect("the default HTTP configuration is valid");
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    addr
}

/// A fresh directory for this test's files.
fn scratch(test: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("ferrymcp-proxy-tls-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn args(value: serde_json::Value) -> ferrymcp_types::JsonObject {
    value.as_object().cloned().unwrap_or_default()
}

#[tokio::test]
async fn an_https_upstream_verified_by_its_ca_file_lists_and_calls_tools() {
    let pki = pki();
    let addr = serve_https(&pki).await;
    let ca_file = scratch("ok").join("ca.pem");
    std::fs::write(&ca_file, &pki.ca_pem).expect("write CA");
    // Both names of the certificate: a DNS name and an IP address.
    for host in ["localhost", "127.0.0.1"] {
        let url = format!("https://{host}:{}/mcp", addr.port());
        let upstream = Upstream::http("secure", HttpTarget::new(url).ca_file(&ca_file));
        let tools = upstream.list_tools().await.expect("listed over TLS");
        assert!(tools.iter().any(|t| t.name() == "add"), "{host}");
        let reply = upstream
            .call_tool(
                "add",
                args(serde_json::json!({"a": 2, "b": 3})),
                RequestOptions::default(),
            )
            .await
            .expect("called over TLS");
        let CallToolResponse::Complete(result) = reply else {
            panic!("{reply:?}")
        };
        assert_eq!(
            result.structured_content,
            Some(serde_json::json!({"result": 5})),
            "{host}"
        );
    }
}

#[tokio::test]
async fn a_certificate_from_an_unknown_ca_fails_with_a_certificate_error() {
    let pki = pki();
    let addr = serve_https(&pki).await;
    let url = format!("https://localhost:{}/mcp", addr.port());

    // The webpki roots alone do not know the test CA.
    let upstream = Upstream::http("secure", HttpTarget::new(url.clone()));
    let error = upstream
        .list_tools()
        .await
        .expect_err("untrusted certificate");
    assert!(matches!(error, ProxyError::Connect { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("invalid peer certificate"), "{message}");
    assert!(message.contains("UnknownIssuer"), "{message}");

    // Nor does a CA file holding another CA: it replaces the roots, it is not added to them.
    let other = scratch("wrong-ca").join("other-ca.pem");
    std::fs::write(&other, ca("another CA").pem()).expect("write CA");
    let upstream = Upstream::http("secure", HttpTarget::new(url).ca_file(&other));
    let message = upstream
        .list_tools()
        .await
        .expect_err("wrong CA")
        .to_string();
    assert!(message.contains("invalid peer certificate"), "{message}");
}

#[tokio::test]
async fn a_missing_or_non_pem_ca_file_is_a_configuration_error() {
    let dir = scratch("bad-file");
    let not_pem = dir.join("not.pem");
    std::fs::write(&not_pem, "-----BEGIN CERTIFICATE-----\nnot base64 !!\n").expect("write");
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "no certificates here\n").expect("write");
    for (path, expected) in [
        (dir.join("missing.pem"), "reading the CA file"),
        (not_pem, "is not valid PEM"),
        (empty, "no PEM CERTIFICATE block"),
    ] {
        let target = HttpTarget::new("https://127.0.0.1:9/mcp").ca_file(&path);
        let upstream = Upstream::http("secure", target);
        let error = upstream.list_tools().await.expect_err("bad CA file");
        let ProxyError::Config(reason) = &error else {
            panic!("{error:?}")
        };
        assert!(reason.contains("upstream 'secure'"), "{reason}");
        assert!(reason.contains(expected), "{reason}");
        assert!(reason.contains(&path.display().to_string()), "{reason}");
        // Fixing the file needs no restart: the next request reads it again.
        assert!(matches!(
            upstream.list_tools().await,
            Err(ProxyError::Config(_))
        ));
    }
}

#[test]
fn the_ca_file_shows_in_debug_and_the_bearer_does_not() {
    let target = HttpTarget::new("https://h/mcp")
        .bearer("s3cret-token")
        .ca_file("/etc/mcp/ca.pem");
    let debug = format!("{target:?}");
    assert!(debug.contains("/etc/mcp/ca.pem"), "{debug}");
    assert!(!debug.contains("s3cret-token"), "{debug}");
}

#[tokio::test]
async fn the_gateway_reaches_an_https_upstream_through_its_toml_ca_file() {
    let pki = pki();
    let addr = serve_https(&pki).await;
    let dir = scratch("gateway");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, &pki.ca_pem).expect("write CA");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nnamespace = \"secure\"\nurl = \"https://localhost:{}/mcp\"\nca_file = {:?}\n",
            addr.port(),
            ca_file.display().to_string()
        ),
    )
    .expect("write config");
    let gateway = ferrymcp_proxy::CommandTarget::new(env!("CARGO_BIN_EXE_ferrymcp-gateway"))
        .arg("--config")
        .arg(config.display().to_string());
    let gateway = Upstream::command("gateway", gateway);
    let reply = gateway
        .call_tool(
            "secure_add",
            args(serde_json::json!({"a": 20, "b": 22})),
            RequestOptions::default(),
        )
        .await
        .expect("called through the gateway over TLS");
    let CallToolResponse::Complete(result) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(
        result.structured_content,
        Some(serde_json::json!({"result": 42}))
    );
}
