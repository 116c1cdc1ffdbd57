//! The gateway's `[auth]` section: its HTTP front as an OAuth 2.1 resource server.
//!
//! ```toml
//! [auth]
//! resource = "https://gateway.example.com/mcp"   # the gateway's canonical URL (the audience)
//! issuers = ["https://auth.example.com"]        # JWTs from these (keys from discovery)
//! scopes_supported = ["tools"]                  # optional, advertised in the metadata
//! required_scopes = []                          # optional, needed by every request
//! resource_name = "Team gateway"                # optional
//!
//! [auth.introspection]                          # optional: opaque tokens (RFC 7662)
//! endpoint = "https://auth.example.com/introspect"
//! client_id = "gateway"
//! client_secret_env = "GATEWAY_INTROSPECTION_SECRET"
//! ```
//!
//! Verified tokens are cached until they expire. The caller's token stays at the gateway:
//! an upstream with `type = "token_exchange"` credentials gets a token of its own for it.

use ferrymcp_core::auth::{
    ResourceServer,
    verify::{CachedVerifier, IntrospectionVerifier, Issuers, JwtVerifier},
};
use serde::Deserialize;

/// The `[auth]` section of the gateway's config.
///
/// ```
/// let auth: ferrymcp_proxy::gateway::AuthSection = toml::from_str(r#"
///     resource = "https://gw.example.com/mcp"
///     issuers = ["https://as.example.com"]
/// "#).unwrap();
/// assert_eq!(auth.issuers.len(), 1);
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// The gateway's canonical URL as clients reach it: the audience its tokens must have,
    /// and the base of the advertised metadata.
    pub resource: String,
    /// The issuers whose JWT access tokens are accepted (their keys come from their
    /// discovery documents).
    #[serde(default)]
    pub issuers: Vec<String>,
    /// Opaque tokens, checked by introspection.
    pub introspection: Option<IntrospectionSection>,
    /// Scopes advertised in the metadata.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    /// Scopes every request needs.
    #[serde(default)]
    pub required_scopes: Vec<String>,
    /// A name for the metadata's `resource_name`.
    pub resource_name: Option<String>,
}

/// `[auth.introspection]`: where opaque tokens are checked, and as which client.
///
/// ```
/// let s: ferrymcp_proxy::gateway::IntrospectionSection = toml::from_str(r#"
///     endpoint = "https://as.example.com/introspect"
///     client_id = "gateway"
///     client_secret_env = "SECRET"
/// "#).unwrap();
/// assert_eq!(s.client_id, "gateway");
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntrospectionSection {
    /// The RFC 7662 endpoint.
    pub endpoint: String,
    /// The client the gateway authenticates as.
    pub client_id: String,
    /// The environment variable holding that client's secret (never in the file).
    pub client_secret_env: String,
}

impl AuthSection {
    /// The resource server this section describes; the error says what is wrong.
    ///
    /// ```
    /// let auth: ferrymcp_proxy::gateway::AuthSection = toml::from_str(r#"
    ///     resource = "https://gw.example.com/mcp"
    ///     issuers = ["https://as.example.com"]
    /// "#).unwrap();
    /// let rs = auth.resource_server().unwrap();
    /// assert_eq!(rs.resource(), "https://gw.example.com/mcp");
    /// ```
    pub fn resource_server(&self) -> Result<ResourceServer, String> {
        if self.issuers.is_empty() && self.introspection.is_none() {
            return Err("[auth] needs `issuers` or `[auth.introspection]`".to_owned());
        }
        let mut issuers = Issuers::builder();
        for issuer in &self.issuers {
            let verifier = JwtVerifier::builder(issuer.clone())
                .audience(self.resource.clone())
                .build()
                .map_err(|e| format!("[auth] issuer {issuer}: {e}"))?;
            issuers = issuers.jwt(verifier);
        }
        if let Some(section) = &self.introspection {
            let secret = std::env::var(&section.client_secret_env).map_err(|_| {
                format!(
                    "[auth.introspection]: the environment variable {} is not set",
                    section.client_secret_env
                )
            })?;
            let verifier = IntrospectionVerifier::builder(section.endpoint.clone())
                .client_credentials(section.client_id.clone(), secret)
                .audience(self.resource.clone())
                .build()
                .map_err(|e| format!("[auth.introspection]: {e}"))?;
            issuers = issuers.opaque(verifier);
        }
        let verifier = issuers.build().map_err(|e| format!("[auth]: {e}"))?;
        let mut rs = ResourceServer::new(&self.resource, CachedVerifier::new(verifier))
            .map_err(|e| format!("[auth]: {e}"))?
            .scopes_supported(self.scopes_supported.iter().cloned())
            .required_scopes(self.required_scopes.iter().cloned());
        for issuer in &self.issuers {
            rs = rs
                .authorization_server(issuer.clone())
                .map_err(|e| format!("[auth]: {e}"))?;
        }
        if let Some(name) = &self.resource_name {
            rs = rs.resource_name(name.clone());
        }
        Ok(rs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_without_any_verifier_is_refused() {
        let auth: AuthSection =
            toml::from_str(r#"resource = "https://gw.example.com/mcp""#).unwrap();
        assert!(auth.resource_server().unwrap_err().contains("issuers"));
    }

    #[test]
    fn a_missing_introspection_secret_is_named() {
        let auth: AuthSection = toml::from_str(
            r#"
            resource = "https://gw.example.com/mcp"
            [introspection]
            endpoint = "https://as.example.com/introspect"
            client_id = "gw"
            client_secret_env = "FERRYMCP_TEST_UNSET_SECRET_VARIABLE"
            "#,
        )
        .unwrap();
        let error = auth.resource_server().unwrap_err();
        assert!(
            error.contains("FERRYMCP_TEST_UNSET_SECRET_VARIABLE"),
            "{error}"
        );
    }

    #[test]
    fn an_inline_secret_is_not_a_field() {
        let parsed: Result<IntrospectionSection, _> = toml::from_str(
            r#"
            endpoint = "https://as.example.com/introspect"
            client_id = "gw"
            client_secret = "s3cret"
            "#,
        );
        assert!(parsed.is_err());
    }
}
