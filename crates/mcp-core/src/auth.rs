//! [`Principal`]: who is calling, as an authentication layer established it.
//!
//! `mcp-core` does not authenticate; a tower/axum layer (or middleware) does, and puts a
//! `Principal` into the request: into the HTTP request's extensions, or into a
//! [`RequestScope`](crate::RequestScope) with [`with_principal`](crate::RequestScope::with_principal).
//! Features that bind state to a caller (the tasks extension scopes tasks by it) read it
//! with [`RequestScope::principal`](crate::RequestScope::principal).

/// An authenticated caller: the OAuth client and, when known, the subject (user).
///
/// ```
/// use mcp_core::auth::Principal;
/// let alice = Principal::new("web-app").with_subject("alice");
/// assert_eq!(alice.scope_key(), "web-app|alice");
/// assert_eq!(Principal::new("cli").scope_key(), "cli");
/// // Separators inside an id are escaped, so two callers never share a key.
/// assert_ne!(Principal::new("a|b").scope_key(), Principal::new("a").with_subject("b").scope_key());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Principal {
    /// The OAuth client id.
    pub client_id: String,
    /// The `sub` claim, if the token has a non-empty one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

impl Principal {
    /// A caller known by client id only.
    ///
    /// ```
    /// assert!(mcp_core::auth::Principal::new("c").subject.is_none());
    /// ```
    pub fn new(client_id: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            subject: None,
        }
    }

    /// Adds the subject; an empty one is ignored (F01).
    ///
    /// ```
    /// let p = mcp_core::auth::Principal::new("c").with_subject("");
    /// assert!(p.subject.is_none());
    /// ```
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        let subject = subject.into();
        self.subject = (!subject.is_empty()).then_some(subject);
        self
    }

    /// The key that state bound to this caller (tasks, input-round state, proxied task
    /// ids) is stored under: `client_id|subject`, or `client_id` without a subject, where
    /// each part has `%` written as `%25` and `|` as `%7C`.
    ///
    /// Two different principals never get the same key: splitting the key on `|` and
    /// unescaping gives back the client id and the subject. A client id that is empty is
    /// still a client (its key is `""`, or `|subject`); features that also serve
    /// anonymous callers keep those apart from every principal.
    ///
    /// ```
    /// use mcp_core::auth::Principal;
    /// assert_eq!(Principal::new("a").with_subject("b").scope_key(), "a|b");
    /// assert_eq!(Principal::new("a|b").scope_key(), "a%7Cb");
    /// assert_eq!(Principal::new("100%").scope_key(), "100%25");
    /// assert_eq!(Principal::new("").with_subject("b").scope_key(), "|b");
    /// ```
    pub fn scope_key(&self) -> String {
        let mut key = escape_part(&self.client_id);
        if let Some(subject) = &self.subject {
            key.push('|');
            key.push_str(&escape_part(subject));
        }
        key
    }
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

    /// Issue 12 (identity): separator collisions between client id and subject.
    #[test]
    fn scope_keys_of_different_principals_differ() {
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
            },
            Principal::new("a"),
        ];
        for (i, one) in principals.iter().enumerate() {
            for other in &principals[i + 1..] {
                assert_ne!(one.scope_key(), other.scope_key(), "{one:?} vs {other:?}");
            }
        }
    }
}
