//! [`Principal`]: who is calling.

use std::sync::Arc;

use ferrymcp_types::JsonObject;

/// An authenticated caller: the issuer that vouched for it, the OAuth client, the subject
/// (user) when known, the scopes it was granted and the token's claims.
///
/// ```
/// use ferrymcp_core::auth::Principal;
/// let alice = Principal::new("web-app").with_subject("alice");
/// assert_eq!(alice.scope_key(), "web-app|alice");
/// assert_eq!(Principal::new("cli").scope_key(), "cli");
/// // Separators inside an id are escaped, so two callers never share a key.
/// assert_ne!(Principal::new("a|b").scope_key(), Principal::new("a").with_subject("b").scope_key());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Principal {
    /// The issuer (`iss`) of the token, when a verifier established the caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The OAuth client id.
    pub client_id: String,
    /// The `sub` claim, if the token has a non-empty one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The scopes granted to the token.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The token's claims (or the introspection answer), as the issuer wrote them; shared,
    /// so a principal is cheap to clone.
    #[serde(default, skip_serializing_if = "no_claims")]
    pub claims: Arc<JsonObject>,
}

impl Principal {
    /// A caller known by client id only.
    ///
    /// ```
    /// assert!(ferrymcp_core::auth::Principal::new("c").subject.is_none());
    /// ```
    pub fn new(client_id: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            ..Self::default()
        }
    }

    /// Adds the subject; an empty one is ignored.
    ///
    /// ```
    /// let p = ferrymcp_core::auth::Principal::new("c").with_subject("");
    /// assert!(p.subject.is_none());
    /// ```
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        let subject = subject.into();
        self.subject = (!subject.is_empty()).then_some(subject);
        self
    }

    /// Adds the issuer; an empty one is ignored.
    ///
    /// ```
    /// let p = ferrymcp_core::auth::Principal::new("c").with_issuer("https://as.example");
    /// assert_eq!(p.issuer.as_deref(), Some("https://as.example"));
    /// ```
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        let issuer = issuer.into();
        self.issuer = (!issuer.is_empty()).then_some(issuer);
        self
    }

    /// Sets the granted scopes.
    ///
    /// ```
    /// let p = ferrymcp_core::auth::Principal::new("c").with_scopes(["read", "write"]);
    /// assert!(p.has_scope("write"));
    /// ```
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the claims.
    ///
    /// ```
    /// let mut claims = ferrymcp_core::types::JsonObject::new();
    /// claims.insert("tenant".into(), "acme".into());
    /// let p = ferrymcp_core::auth::Principal::new("c").with_claims(claims);
    /// assert_eq!(p.claim("tenant"), Some(&serde_json::json!("acme")));
    /// ```
    pub fn with_claims(mut self, claims: JsonObject) -> Self {
        self.claims = Arc::new(claims);
        self
    }

    /// Whether the scope was granted, exactly (no hierarchy: see
    /// [`ScopeMatcher`](crate::auth::ScopeMatcher) for that).
    ///
    /// ```
    /// assert!(!ferrymcp_core::auth::Principal::new("c").has_scope("read"));
    /// ```
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|granted| granted == scope)
    }

    /// One claim of the token.
    ///
    /// ```
    /// assert!(ferrymcp_core::auth::Principal::new("c").claim("sub").is_none());
    /// ```
    pub fn claim(&self, name: &str) -> Option<&serde_json::Value> {
        self.claims.get(name)
    }

    /// The key that state bound to this caller (tasks, input-round state, proxied task
    /// ids) is stored under. Each part has `%` written as `%25` and `|` as `%7C`:
    ///
    /// - without an issuer: `client_id|subject`, or `client_id` without a subject;
    /// - with an issuer: `issuer|client_id|subject`, a subject that is absent written as a
    ///   lone `%` (which escaping never produces).
    ///
    /// Two different callers never get the same key: the number of parts tells the forms
    /// apart, and unescaping the parts gives back the identity. Scopes and claims are not
    /// part of the key: the same caller with a fresher token keeps its state.
    ///
    /// ```
    /// use ferrymcp_core::auth::Principal;
    /// assert_eq!(Principal::new("a").with_subject("b").scope_key(), "a|b");
    /// assert_eq!(Principal::new("a|b").scope_key(), "a%7Cb");
    /// assert_eq!(Principal::new("100%").scope_key(), "100%25");
    /// assert_eq!(Principal::new("").with_subject("b").scope_key(), "|b");
    /// let issued = Principal::new("app").with_issuer("https://as").with_subject("alice");
    /// assert_eq!(issued.scope_key(), "https://as|app|alice");
    /// assert_eq!(Principal::new("app").with_issuer("https://as").scope_key(), "https://as|app|%");
    /// ```
    pub fn scope_key(&self) -> String {
        let mut key = String::new();
        if let Some(issuer) = &self.issuer {
            key.push_str(&escape_part(issuer));
            key.push('|');
        }
        key.push_str(&escape_part(&self.client_id));
        match (&self.subject, &self.issuer) {
            (Some(subject), _) => {
                key.push('|');
                key.push_str(&escape_part(subject));
            }
            (None, Some(_)) => key.push_str("|%"),
            (None, None) => {}
        }
        key
    }
}

fn no_claims(claims: &Arc<JsonObject>) -> bool {
    claims.is_empty()
}

/// One part of a [`Principal::scope_key`]: `%` and `|` percent-escaped.
fn escape_part(part: &str) -> String {
    let mut escaped = String::with_capacity(part.len());
    for c in part.chars() {
        match c {
            '%' => escaped.push_str("%25"),
            '|' => escaped.push_str("%7C"),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::Principal;

    /// Issue 12 (identity) and AU16: separator collisions between issuer, client id and subject.
    #[test]
    fn au16_scope_keys_of_different_principals_differ() {
        let principals = [
            Principal::new("a|b"),
            Principal::new("a").with_subject("b"),
            Principal::new("a%7Cb"),
            Principal::new("a|").with_subject("b"),
            Principal::new("a").with_subject("|b"),
            Principal::new(""),
            Principal::new("").with_subject("b"),
            Principal::new("|b"),
            Principal {
                client_id: "a".into(),
                subject: Some(String::new()),
                ..Principal::default()
            },
            Principal::new("a"),
            Principal::new("b").with_issuer("a"),
            Principal::new("b").with_issuer("a").with_subject("%"),
            Principal::new("b|%").with_issuer("a"),
            Principal::new("a").with_issuer("x").with_subject("b"),
            Principal::new("b").with_issuer("x|a"),
            Principal::new("b").with_issuer("y").with_subject("b"),
        ];
        for (i, one) in principals.iter().enumerate() {
            for other in &principals[i + 1..] {
                assert_ne!(one.scope_key(), other.scope_key(), "{one:?} vs {other:?}");
            }
        }
    }
}
