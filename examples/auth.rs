//! An OAuth 2.1 resource server: every request to the HTTP endpoint needs a bearer token
//! (a JWT) from one authorization server, issued for this server's URL; a tool can ask for
//! a scope of its own.
//!
//! `cargo run --example auth -- 127.0.0.1:8000 http://127.0.0.1:9000` (the address to listen
//! on, then the issuer). The tokens' audience is this server's URL, `http://<address>/mcp`.
//! Without a token a client gets `401` with a `WWW-Authenticate` challenge that points at
//! `/.well-known/oauth-protected-resource/mcp`, where it finds the issuer; without the
//! scope `admin`, `reset` answers `403` with an `insufficient_scope` challenge.

use ferrymcp::{
    HttpConfig, HttpServer, Server,
    auth::{
        Principal, ResourceServer,
        verify::{CachedVerifier, JwtVerifier},
    },
    tool,
};

/// Says which OAuth client the token was issued to.
#[tool(read_only)]
async fn whoami(caller: Principal) -> String {
    caller.client_id
}

/// Resets the counters: only for tokens with the scope `admin`.
#[tool(requires = ["admin"], destructive)]
async fn reset() -> String {
    "reset".into()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let address = args.next().unwrap_or_else(|| "127.0.0.1:8000".into());
    let issuer = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:9000".into());
    let audience = format!("http://{address}/mcp");

    // Signing keys come from the issuer's discovery document; a verified token is cached
    // until it expires.
    let verifier = JwtVerifier::builder(&issuer).audience(&audience).build()?;
    let resource_server = ResourceServer::new(&audience, CachedVerifier::new(verifier))?
        .authorization_server(&issuer)?
        .scopes_supported(["admin"]);

    let server = Server::new("auth");
    server.add_tool(whoami)?;
    server.add_tool(reset)?;
    let http = HttpServer::bind(server, address, HttpConfig::new().auth(resource_server)).await?;
    http.run_until(ferrymcp::shutdown_signal()).await?;
    Ok(())
}
