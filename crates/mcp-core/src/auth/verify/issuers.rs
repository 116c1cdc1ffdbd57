//! [`Issuers`]: several authorization servers in one resource server.

use std::{collections::HashMap, fmt, sync::Arc};

use super::{
    AuthConfigError, TokenVerifier, Verified, VerifyError,
    jwt::{JwtVerifier, Parsed},
};

/// Several issuers in one server (multi-tenant): a JWT goes to the [`JwtVerifier`] of the
/// issuer its `iss` names, each with its own keys and audiences; a JWT from an issuer not
/// configured is refused (`unknown issuer`) without any request to anyone. Tokens that are
/// not JWTs go to the opaque-token verifiers (typically
/// [`IntrospectionVerifier`](super::IntrospectionVerifier)s) in the order added: the first
/// that accepts the token wins; if none does the token is invalid, or unavailable when one
/// of them could not be asked.
///
/// ```
/// use ferrymcp_core::auth::verify::{Issuers, JwtVerifier};
/// let issuers = Issuers::builder()
///     .jwt(JwtVerifier::builder("https://tenant-a.example").audience("https://mcp.example/mcp").build()?)
///     .jwt(JwtVerifier::builder("https://tenant-b.example").audience("https://mcp.example/b").build()?)
///     .build()?;
/// assert_eq!(issuers.jwt_issuers().count(), 2);
/// # Ok::<(), ferrymcp_core::auth::verify::AuthConfigError>(())
/// ```
#[derive(Clone)]
pub struct Issuers {
    jwt: Arc<HashMap<String, JwtVerifier>>,
    opaque: Arc<[Arc<dyn TokenVerifier>]>,
}

/// The verifiers of an [`Issuers`]; [`build`](Self::build) checks them.
///
/// ```
/// use ferrymcp_core::auth::verify::{AuthConfigError, Issuers};
/// assert_eq!(Issuers::builder().build().unwrap_err(), AuthConfigError::NoVerifier);
/// ```
#[derive(Default)]
#[must_use]
pub struct IssuersBuilder {
    jwt: Vec<JwtVerifier>,
    opaque: Vec<Arc<dyn TokenVerifier>>,
}

impl Issuers {
    /// Starts an empty set.
    ///
    /// ```
    /// let _ = ferrymcp_core::auth::verify::Issuers::builder();
    /// ```
    pub fn builder() -> IssuersBuilder {
        IssuersBuilder::default()
    }

    /// The issuers whose JWTs are accepted.
    ///
    /// ```
    /// use ferrymcp_core::auth::verify::{Issuers, JwtVerifier};
    /// let one = Issuers::builder()
    ///     .jwt(JwtVerifier::builder("https://as").audience("urn:me").build().unwrap())
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(one.jwt_issuers().collect::<Vec<_>>(), ["https://as"]);
    /// ```
    pub fn jwt_issuers(&self) -> impl Iterator<Item = &str> {
        self.jwt.keys().map(String::as_str)
    }
}

impl IssuersBuilder {
    /// Accepts the JWTs of `verifier`'s issuer.
    ///
    /// ```
    /// use ferrymcp_core::auth::verify::{Issuers, JwtVerifier};
    /// let _ = Issuers::builder().jwt(JwtVerifier::builder("https://as").audience("urn:me").build().unwrap());
    /// ```
    pub fn jwt(mut self, verifier: JwtVerifier) -> Self {
        self.jwt.push(verifier);
        self
    }

    /// Asks `verifier` about tokens that are not JWTs, after those added before.
    ///
    /// ```
    /// use ferrymcp_core::auth::verify::{IntrospectionVerifier, Issuers};
    /// let introspection = IntrospectionVerifier::builder("https://as/introspect")
    ///     .client_credentials("rs", "secret")
    ///     .audience("urn:me")
    ///     .build()
    ///     .unwrap();
    /// let _ = Issuers::builder().opaque(introspection);
    /// ```
    pub fn opaque(mut self, verifier: impl TokenVerifier) -> Self {
        self.opaque.push(Arc::new(verifier));
        self
    }

    /// Checks that there is a verifier and no issuer twice.
    ///
    /// ```
    /// use ferrymcp_core::auth::verify::{AuthConfigError, Issuers, JwtVerifier};
    /// let v = JwtVerifier::builder("https://as").audience("urn:me").build().unwrap();
    /// let twice = Issuers::builder().jwt(v.clone()).jwt(v).build();
    /// assert_eq!(twice.unwrap_err(), AuthConfigError::DuplicateIssuer("https://as".into()));
    /// ```
    pub fn build(self) -> Result<Issuers, AuthConfigError> {
        if self.jwt.is_empty() && self.opaque.is_empty() {
            return Err(AuthConfigError::NoVerifier);
        }
        let mut jwt = HashMap::with_capacity(self.jwt.len());
        for verifier in self.jwt {
            let issuer = verifier.issuer().to_owned();
            if jwt.insert(issuer.clone(), verifier).is_some() {
                return Err(AuthConfigError::DuplicateIssuer(issuer));
            }
        }
        Ok(Issuers {
            jwt: Arc::new(jwt),
            opaque: self.opaque.into(),
        })
    }
}

impl fmt::Debug for Issuers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Issuers")
            .field("jwt", &self.jwt.values().collect::<Vec<_>>())
            .field("opaque", &self.opaque.len())
            .finish()
    }
}

impl fmt::Debug for IssuersBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuersBuilder")
            .field("jwt", &self.jwt)
            .field("opaque", &self.opaque.len())
            .finish()
    }
}

#[async_trait::async_trait]
impl TokenVerifier for Issuers {
    async fn verify(&self, token: &str) -> Result<Verified, VerifyError> {
        if let Some(parsed) = Parsed::new(token) {
            let verifier = parsed
                .issuer()
                .and_then(|iss| self.jwt.get(iss))
                .ok_or_else(|| VerifyError::Invalid("unknown issuer".into()))?;
            return verifier.verify_parsed(parsed).await;
        }
        let mut outcome = Err(VerifyError::Invalid(
            "the token is neither a JWT of a known issuer nor an active opaque token".into(),
        ));
        for verifier in self.opaque.iter() {
            match verifier.verify(token).await {
                Ok(verified) => return Ok(verified),
                Err(unavailable @ VerifyError::Unavailable(_)) => outcome = Err(unavailable),
                Err(VerifyError::Invalid(message)) => {
                    if matches!(outcome, Err(VerifyError::Invalid(_))) {
                        outcome = Err(VerifyError::Invalid(message));
                    }
                }
            }
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Principal;

    struct Fixed(Result<Verified, VerifyError>);

    #[async_trait::async_trait]
    impl TokenVerifier for Fixed {
        async fn verify(&self, _token: &str) -> Result<Verified, VerifyError> {
            self.0.clone()
        }
    }

    fn jwt(issuer: &str) -> JwtVerifier {
        // Port 9 (discard) refuses connections: any attempt to fetch keys would fail.
        JwtVerifier::builder(issuer)
            .audience("urn:me")
            .jwks_uri("http://127.0.0.1:9/jwks")
            .build()
            .unwrap()
    }

    fn unsigned(iss: &str) -> String {
        use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
        let part = |v: serde_json::Value| URL_SAFE_NO_PAD.encode(v.to_string());
        format!(
            "{}.{}.c2ln",
            part(serde_json::json!({"alg": "RS256"})),
            part(
                serde_json::json!({"iss": iss, "aud": "urn:me", "sub": "s", "exp": 4_000_000_000u64})
            )
        )
    }

    #[tokio::test]
    async fn au14_a_jwt_goes_to_the_verifier_of_its_issuer_and_an_unknown_issuer_is_refused() {
        let issuers = Issuers::builder()
            .jwt(jwt("https://a"))
            .jwt(jwt("https://b"))
            .build()
            .unwrap();
        assert_eq!(
            issuers.verify(&unsigned("https://c")).await,
            Err(VerifyError::Invalid("unknown issuer".into()))
        );
        // A known issuer's verifier is asked: it tries to fetch keys, and cannot.
        assert!(matches!(
            issuers.verify(&unsigned("https://b")).await,
            Err(VerifyError::Unavailable(_))
        ));
    }

    #[tokio::test]
    async fn au14_opaque_tokens_go_to_the_opaque_verifiers_in_order() {
        let ok = Verified {
            principal: Principal::new("second"),
            expires_at: None,
        };
        let issuers = Issuers::builder()
            .jwt(jwt("https://a"))
            .opaque(Fixed(Err(VerifyError::Invalid(
                "the token is not active".into(),
            ))))
            .opaque(Fixed(Ok(ok.clone())))
            .build()
            .unwrap();
        assert_eq!(issuers.verify("opaque").await, Ok(ok));

        let none = Issuers::builder()
            .opaque(Fixed(Err(VerifyError::Unavailable("down".into()))))
            .opaque(Fixed(Err(VerifyError::Invalid(
                "the token is not active".into(),
            ))))
            .build()
            .unwrap();
        assert_eq!(
            none.verify("opaque").await,
            Err(VerifyError::Unavailable("down".into()))
        );

        let jwt_only = Issuers::builder().jwt(jwt("https://a")).build().unwrap();
        assert!(matches!(
            jwt_only.verify("opaque").await,
            Err(VerifyError::Invalid(_))
        ));
    }
}
