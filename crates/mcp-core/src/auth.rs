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

    /// `client_id|sub`, or `client_id` without a subject (F01).
    ///
    /// ```
    /// assert_eq!(mcp_core::auth::Principal::new("a").with_subject("b").scope_key(), "a|b");
    /// ```
    pub fn scope_key(&self) -> String {
        match &self.subject {
            Some(subject) => format!("{}|{}", self.client_id, subject),
            None => self.client_id.clone(),
        }
    }
}
