//! [`ResourceServer`]: this server as an OAuth 2.1 protected resource — its canonical URI,
//! the authorization servers it trusts, the verifier of its tokens, its RFC 9728 metadata
//! and the `WWW-Authenticate` challenges it answers with.

use std::{fmt, sync::Arc};

use serde_json::{Value, json};

use super::verify::TokenVerifier;

/// The well-known path of RFC 9728 protected resource metadata.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// A resource URI that cannot be this server's canonical URI.
///
/// ```
/// use ferrymcp_core::auth::ResourceServer;
/// # use ferrymcp_core::auth::{Principal, verify::{TokenVerifier, Verified, VerifyError}};
/// # struct Nobody;
/// # #[async_trait::async_trait]
/// # impl TokenVerifier for Nobody {
/// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
/// # }
/// let error = ResourceServer::new("not a url", Nobody).unwrap_err();
/// assert!(error.to_string().contains("not a URL"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidResource {
    /// The text does not parse as an absolute URL.
    #[error("the resource {0:?} is not a URL")]
    NotAUrl(String),
    /// Only `https` (and `http`, for loopback and development) identify a resource.
    #[error("the resource {0:?} must be an http or https URL")]
    Scheme(String),
    /// A canonical URI has no fragment.
    #[error("the resource {0:?} must not have a fragment")]
    Fragment(String),
    /// An authorization server's issuer must be an absolute URL.
    #[error("the authorization server {0:?} is not an http or https URL")]
    AuthorizationServer(String),
}

/// This server as an OAuth 2.1 resource server: every request to the MCP endpoint must
/// carry `Authorization: Bearer <token>` that `verifier` accepts, and the endpoint
/// publishes its RFC 9728 metadata so clients find where to get a token.
///
/// `resource` is the canonical URI clients use to reach the endpoint, as the public sees
/// it (behind a reverse proxy, the proxy's URL): it is the audience tokens must be issued
/// for and the base of every advertised URL. It is normalized: scheme and host in lower
/// case, no trailing slash.
///
/// ```
/// use ferrymcp_core::auth::ResourceServer;
/// # use ferrymcp_core::auth::{Principal, verify::{TokenVerifier, Verified, VerifyError}};
/// # struct Verifier;
/// # #[async_trait::async_trait]
/// # impl TokenVerifier for Verifier {
/// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
/// # }
/// let rs = ResourceServer::new("HTTPS://MCP.Example.com/mcp/", Verifier)
///     .unwrap()
///     .authorization_server("https://auth.example.com")
///     .unwrap()
///     .scopes_supported(["tools", "child"])
///     .resource_name("Example MCP server");
/// assert_eq!(rs.resource(), "https://mcp.example.com/mcp");
/// assert_eq!(
///     rs.metadata_url(),
///     "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
/// );
/// assert_eq!(rs.metadata()["authorization_servers"][0], "https://auth.example.com");
/// ```
#[derive(Clone)]
pub struct ResourceServer {
    verifier: Arc<dyn TokenVerifier>,
    resource: String,
    /// The path part of `resource` (`/mcp`, or empty).
    public_path: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    required_scopes: Vec<String>,
    resource_name: Option<String>,
    resource_documentation: Option<String>,
    metadata_url: String,
    metadata: Arc<Value>,
}

impl fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("scopes_supported", &self.scopes_supported)
            .field("required_scopes", &self.required_scopes)
            .finish_non_exhaustive()
    }
}

impl ResourceServer {
    /// A resource server for the canonical URI `resource`, accepting the tokens `verifier`
    /// accepts.
    ///
    /// ```
    /// # use ferrymcp_core::auth::{ResourceServer, Principal, verify::{TokenVerifier, Verified, VerifyError}};
    /// # struct Verifier;
    /// # #[async_trait::async_trait]
    /// # impl TokenVerifier for Verifier {
    /// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
    /// # }
    /// let rs = ResourceServer::new("http://127.0.0.1:8000/mcp", Verifier).unwrap();
    /// assert_eq!(rs.resource(), "http://127.0.0.1:8000/mcp");
    /// ```
    pub fn new(
        resource: impl AsRef<str>,
        verifier: impl TokenVerifier,
    ) -> Result<Self, InvalidResource> {
        Self::with_verifier(resource, Arc::new(verifier))
    }

    /// [`new`](Self::new) with a shared verifier.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferrymcp_core::auth::{ResourceServer, Principal, verify::{TokenVerifier, Verified, VerifyError}};
    /// # struct Verifier;
    /// # #[async_trait::async_trait]
    /// # impl TokenVerifier for Verifier {
    /// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
    /// # }
    /// let verifier: Arc<dyn TokenVerifier> = Arc::new(Verifier);
    /// let rs = ResourceServer::with_verifier("https://a.example/mcp", verifier).unwrap();
    /// # let _ = rs;
    /// ```
    pub fn with_verifier(
        resource: impl AsRef<str>,
        verifier: Arc<dyn TokenVerifier>,
    ) -> Result<Self, InvalidResource> {
        let (origin, public_path) = canonical(resource.as_ref())?;
        let mut rs = Self {
            verifier,
            resource: format!("{origin}{public_path}"),
            metadata_url: format!("{origin}{METADATA_PATH}{public_path}"),
            public_path,
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            required_scopes: Vec::new(),
            resource_name: None,
            resource_documentation: None,
            metadata: Arc::new(Value::Null),
        };
        rs.rebuild();
        Ok(rs)
    }

    /// Adds an authorization server (its issuer URL) clients may get tokens from.
    ///
    /// ```
    /// # use ferrymcp_core::auth::{ResourceServer, Principal, verify::{TokenVerifier, Verified, VerifyError}};
    /// # struct Verifier;
    /// # #[async_trait::async_trait]
    /// # impl TokenVerifier for Verifier {
    /// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
    /// # }
    /// let rs = ResourceServer::new("https://a.example/mcp", Verifier).unwrap();
    /// assert!(rs.clone().authorization_server("ftp://x").is_err());
    /// assert!(rs.authorization_server("https://auth.example").is_ok());
    /// ```
    pub fn authorization_server(
        mut self,
        issuer: impl Into<String>,
    ) -> Result<Self, InvalidResource> {
        let issuer = issuer.into();
        match url::Url::parse(&issuer) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => {}
            _ => return Err(InvalidResource::AuthorizationServer(issuer)),
        }
        if !self.authorization_servers.contains(&issuer) {
            self.authorization_servers.push(issuer);
        }
        self.rebuild();
        Ok(self)
    }

    /// The scopes advertised in the metadata (`scopes_supported`). `offline_access` is
    /// left out: it is not a scope of this resource.
    ///
    /// ```
    /// # use ferrymcp_core::auth::{ResourceServer, Principal, verify::{TokenVerifier, Verified, VerifyError}};
    /// # struct Verifier;
    /// # #[async_trait::async_trait]
    /// # impl TokenVerifier for Verifier {
    /// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
    /// # }
    /// let rs = ResourceServer::new("https://a.example/mcp", Verifier).unwrap().scopes_supported(["child", "offline_access"]);
    /// assert_eq!(rs.metadata()["scopes_supported"], serde_json::json!(["child"]));
    /// ```
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = clean_scopes(scopes);
        self.rebuild();
        self
    }

    /// Scopes every request needs, whatever it does (named in the 401 challenge, so a
    /// client asks for them up front). None by default: a valid token is enough, and each
    /// component's requirements add their own.
    ///
    /// ```
    /// # use ferrymcp_core::auth::{ResourceServer, Principal, verify::{TokenVerifier, Verified, VerifyError}};
    /// # struct Verifier;
    /// # #[async_trait::async_trait]
    /// # impl TokenVerifier for Verifier {
    /// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
    /// # }
    /// let rs = ResourceServer::new("https://a.example/mcp", Verifier).unwrap().required_scopes(["mcp"]);
    /// assert_eq!(rs.required(), ["mcp"]);
    /// ```
    pub fn required_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_scopes = clean_scopes(scopes);
        self.rebuild();
        self
    }

    /// A human-readable name for the metadata's `resource_name`.
    ///
    /// ```
    /// # use ferrymcp_core::auth::{ResourceServer, Principal, verify::{TokenVerifier, Verified, VerifyError}};
    /// # struct Verifier;
    /// # #[async_trait::async_trait]
    /// # impl TokenVerifier for Verifier {
    /// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
    /// # }
    /// let rs = ResourceServer::new("https://a.example/mcp", Verifier).unwrap().resource_name("Demo");
    /// assert_eq!(rs.metadata()["resource_name"], "Demo");
    /// ```
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self.rebuild();
        self
    }

    /// A URL of human-readable documentation, for `resource_documentation`.
    ///
    /// ```
    /// # use ferrymcp_core::auth::{ResourceServer, Principal, verify::{TokenVerifier, Verified, VerifyError}};
    /// # struct Verifier;
    /// # #[async_trait::async_trait]
    /// # impl TokenVerifier for Verifier {
    /// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
    /// # }
    /// let rs = ResourceServer::new("https://a.example/mcp", Verifier).unwrap().resource_documentation("https://a.example/docs");
    /// assert_eq!(rs.metadata()["resource_documentation"], "https://a.example/docs");
    /// ```
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self.rebuild();
        self
    }

    /// The canonical URI of the resource (the audience of its tokens).
    ///
    /// ```
    /// # use ferrymcp_core::auth::{ResourceServer, Principal, verify::{TokenVerifier, Verified, VerifyError}};
    /// # struct Verifier;
    /// # #[async_trait::async_trait]
    /// # impl TokenVerifier for Verifier {
    /// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
    /// # }
    /// assert_eq!(ResourceServer::new("https://A.example:443/", Verifier).unwrap().resource(), "https://a.example");
    /// ```
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The URL of the metadata document, as advertised in challenges.
    ///
    /// ```
    /// # use ferrymcp_core::auth::{ResourceServer, Principal, verify::{TokenVerifier, Verified, VerifyError}};
    /// # struct Verifier;
    /// # #[async_trait::async_trait]
    /// # impl TokenVerifier for Verifier {
    /// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
    /// # }
    /// let rs = ResourceServer::new("https://a.example", Verifier).unwrap();
    /// assert_eq!(rs.metadata_url(), "https://a.example/.well-known/oauth-protected-resource");
    /// ```
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// The RFC 9728 metadata document.
    ///
    /// ```
    /// # use ferrymcp_core::auth::{ResourceServer, Principal, verify::{TokenVerifier, Verified, VerifyError}};
    /// # struct Verifier;
    /// # #[async_trait::async_trait]
    /// # impl TokenVerifier for Verifier {
    /// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
    /// # }
    /// let rs = ResourceServer::new("https://a.example/mcp", Verifier).unwrap();
    /// assert_eq!(rs.metadata()["resource"], "https://a.example/mcp");
    /// assert_eq!(rs.metadata()["bearer_methods_supported"], serde_json::json!(["header"]));
    /// ```
    pub fn metadata(&self) -> &Value {
        &self.metadata
    }

    /// The scopes every request needs.
    ///
    /// ```
    /// # use ferrymcp_core::auth::{ResourceServer, Principal, verify::{TokenVerifier, Verified, VerifyError}};
    /// # struct Verifier;
    /// # #[async_trait::async_trait]
    /// # impl TokenVerifier for Verifier {
    /// #     async fn verify(&self, _: &str) -> Result<Verified, VerifyError> { Err(VerifyError::Invalid("no".into())) }
    /// # }
    /// assert!(ResourceServer::new("https://a.example", Verifier).unwrap().required().is_empty());
    /// ```
    pub fn required(&self) -> &[String] {
        &self.required_scopes
    }

    /// The verifier of this server's tokens.
    pub(crate) fn verifier(&self) -> &dyn TokenVerifier {
        self.verifier.as_ref()
    }

    /// The paths the metadata is served at, for an endpoint served locally at
    /// `local_path`: the path form for the public path and for the local one (they
    /// differ behind a reverse proxy that rewrites paths), and the root form.
    pub(crate) fn metadata_paths(&self, local_path: &str) -> Vec<String> {
        let local = local_path.trim_end_matches('/');
        let mut paths = vec![format!("{METADATA_PATH}{}", self.public_path)];
        for path in [format!("{METADATA_PATH}{local}"), METADATA_PATH.to_owned()] {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        paths
    }

    /// The `WWW-Authenticate` value of a 401 for a request without a token.
    pub(crate) fn challenge_missing(&self) -> String {
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url);
        push_scope(&mut challenge, &self.required_scopes);
        challenge
    }

    /// The `WWW-Authenticate` value of a 401 for a token that is not valid here.
    pub(crate) fn challenge_invalid(&self, description: &str) -> String {
        let mut challenge = format!(
            "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{}\"",
            quoted(description),
            self.metadata_url
        );
        push_scope(&mut challenge, &self.required_scopes);
        challenge
    }

    /// The `WWW-Authenticate` value of a 400 for a request that carries its token wrongly
    /// (in more than one place).
    pub(crate) fn challenge_bad_request(&self, description: &str) -> String {
        format!(
            "Bearer error=\"invalid_request\", error_description=\"{}\", resource_metadata=\"{}\"",
            quoted(description),
            self.metadata_url
        )
    }

    /// The `WWW-Authenticate` value of a 403: `scopes` are every scope the operation needs.
    pub(crate) fn challenge_insufficient(&self, scopes: &[String]) -> String {
        let mut all = self.required_scopes.clone();
        for scope in scopes {
            if scope != "offline_access" && !all.contains(scope) {
                all.push(scope.clone());
            }
        }
        let mut challenge = format!(
            "Bearer error=\"insufficient_scope\", resource_metadata=\"{}\"",
            self.metadata_url
        );
        push_scope(&mut challenge, &all);
        challenge
    }

    fn rebuild(&mut self) {
        let mut metadata = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            metadata["scopes_supported"] = json!(self.scopes_supported);
        }
        if let Some(name) = &self.resource_name {
            metadata["resource_name"] = json!(name);
        }
        if let Some(url) = &self.resource_documentation {
            metadata["resource_documentation"] = json!(url);
        }
        self.metadata = Arc::new(metadata);
    }
}

/// The canonical form of an `http(s)` resource URI, if it is one.
pub(crate) fn canonical_uri(resource: &str) -> Option<String> {
    canonical(resource)
        .ok()
        .map(|(origin, path)| format!("{origin}{path}"))
}

/// The canonical form of a resource URI, split into origin and path.
fn canonical(resource: &str) -> Result<(String, String), InvalidResource> {
    let url = url::Url::parse(resource.trim())
        .map_err(|_| InvalidResource::NotAUrl(resource.to_owned()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(InvalidResource::Scheme(resource.to_owned()));
    }
    if url.fragment().is_some() {
        return Err(InvalidResource::Fragment(resource.to_owned()));
    }
    let Some(host) = url.host_str() else {
        return Err(InvalidResource::NotAUrl(resource.to_owned()));
    };
    // `url` lower-cases the scheme and the host, and drops a default port.
    let origin = match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    };
    let mut path = url.path().trim_end_matches('/').to_owned();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    Ok((origin, path))
}

fn clean_scopes<I, S>(scopes: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut clean: Vec<String> = Vec::new();
    for scope in scopes {
        let scope = scope.into();
        if !scope.is_empty() && scope != "offline_access" && !clean.contains(&scope) {
            clean.push(scope);
        }
    }
    clean
}

fn push_scope(challenge: &mut String, scopes: &[String]) {
    if !scopes.is_empty() {
        challenge.push_str(", scope=\"");
        challenge.push_str(&quoted(&scopes.join(" ")));
        challenge.push('"');
    }
}

/// Text safe inside a quoted-string of a header: no quotes, backslashes or controls.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn au2_the_canonical_uri_is_lower_case_without_trailing_slash_or_fragment() {
        assert_eq!(
            canonical("HTTPS://Example.COM/MCP/").unwrap(),
            ("https://example.com".to_owned(), "/MCP".to_owned())
        );
        assert_eq!(
            canonical("http://127.0.0.1:8000/mcp").unwrap(),
            ("http://127.0.0.1:8000".to_owned(), "/mcp".to_owned())
        );
        assert_eq!(
            canonical("https://example.com:443").unwrap(),
            ("https://example.com".to_owned(), String::new())
        );
        assert!(matches!(
            canonical("https://example.com/mcp#x"),
            Err(InvalidResource::Fragment(_))
        ));
        assert!(matches!(
            canonical("ws://example.com"),
            Err(InvalidResource::Scheme(_))
        ));
    }

    #[test]
    fn challenges_quote_safely() {
        assert_eq!(quoted("a \"b\"\n\\c"), "a 'b' 'c");
    }
}
