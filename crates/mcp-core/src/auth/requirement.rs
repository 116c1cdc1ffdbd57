//! [`Requirement`]: who may use a component; [`ScopeMatcher`]: what a granted scope covers.

use std::{fmt, sync::Arc};

use super::Principal;

/// Decides whether the scopes a caller was granted cover a required scope. The default,
/// [`ExactScopes`], wants the very scope; a server with a hierarchy (`files` covering
/// `files:read`, say) installs its own with
/// [`Server::with_scope_matcher`](crate::Server::with_scope_matcher).
///
/// ```
/// use ferrymcp_core::auth::ScopeMatcher;
///
/// /// `files` covers `files:read` and `files:write`.
/// struct Hierarchy;
/// impl ScopeMatcher for Hierarchy {
///     fn covers(&self, granted: &[String], required: &str) -> bool {
///         granted.iter().any(|g| {
///             g == required || required.strip_prefix(g.as_str()).is_some_and(|rest| rest.starts_with(':'))
///         })
///     }
/// }
/// assert!(Hierarchy.covers(&["files".to_owned()], "files:read"));
/// assert!(!Hierarchy.covers(&["files:read".to_owned()], "files"));
/// ```
pub trait ScopeMatcher: Send + Sync + 'static {
    /// Whether `granted` covers `required`.
    fn covers(&self, granted: &[String], required: &str) -> bool;
}

/// The default matcher: a required scope is covered only by the same scope.
///
/// ```
/// use ferrymcp_core::auth::{ExactScopes, ScopeMatcher};
/// assert!(ExactScopes.covers(&["read".to_owned()], "read"));
/// assert!(!ExactScopes.covers(&["read".to_owned()], "read:all"));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ExactScopes;

impl ScopeMatcher for ExactScopes {
    fn covers(&self, granted: &[String], required: &str) -> bool {
        granted.iter().any(|scope| scope == required)
    }
}

type Predicate = Arc<dyn Fn(&Principal) -> bool + Send + Sync>;

/// What a caller needs to use a tool, resource, template, prompt or a whole mount: every
/// scope listed, and every predicate over the principal true. The empty requirement lets
/// anyone in, anonymous callers included; any other needs a principal.
///
/// ```
/// use ferrymcp_core::auth::{ExactScopes, Principal, Requirement};
/// let admin = Requirement::scopes(["admin"]).and(Requirement::predicate(|p: &Principal| {
///     p.claim("tenant").is_some_and(|t| t == "acme")
/// }));
/// let mut claims = ferrymcp_core::types::JsonObject::new();
/// claims.insert("tenant".into(), "acme".into());
/// let alice = Principal::new("app").with_scopes(["admin"]).with_claims(claims);
/// assert!(admin.allows(Some(&alice), &ExactScopes));
/// assert!(!admin.allows(Some(&Principal::new("app").with_scopes(["admin"])), &ExactScopes));
/// assert!(!admin.allows(None, &ExactScopes));
/// assert_eq!(admin.required_scopes(), ["admin"]);
/// ```
#[derive(Clone, Default)]
pub struct Requirement {
    scopes: Vec<String>,
    predicates: Vec<Predicate>,
}

impl Requirement {
    /// No requirement: anyone may use the component.
    ///
    /// ```
    /// assert!(ferrymcp_core::auth::Requirement::none().is_none());
    /// ```
    pub fn none() -> Self {
        Self::default()
    }

    /// Every one of `scopes` is needed.
    ///
    /// ```
    /// let r = ferrymcp_core::auth::Requirement::scopes(["read", "write"]);
    /// assert_eq!(r.required_scopes(), ["read", "write"]);
    /// ```
    pub fn scopes<I, S>(scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut requirement = Self::default();
        for scope in scopes {
            requirement.push_scope(scope.into());
        }
        requirement
    }

    /// The caller must be a principal for which `allowed` is true.
    ///
    /// ```
    /// use ferrymcp_core::auth::{ExactScopes, Principal, Requirement};
    /// let staff = Requirement::predicate(|p: &Principal| p.client_id == "staff-app");
    /// assert!(staff.allows(Some(&Principal::new("staff-app")), &ExactScopes));
    /// ```
    pub fn predicate(allowed: impl Fn(&Principal) -> bool + Send + Sync + 'static) -> Self {
        Self {
            scopes: Vec::new(),
            predicates: vec![Arc::new(allowed)],
        }
    }

    /// Both requirements (a mount's and its component's, say).
    ///
    /// ```
    /// use ferrymcp_core::auth::Requirement;
    /// let both = Requirement::scopes(["child"]).and(Requirement::scopes(["write", "child"]));
    /// assert_eq!(both.required_scopes(), ["child", "write"]);
    /// ```
    pub fn and(mut self, other: Requirement) -> Self {
        for scope in other.scopes {
            self.push_scope(scope);
        }
        self.predicates.extend(other.predicates);
        self
    }

    /// Whether anyone may use the component.
    ///
    /// ```
    /// assert!(!ferrymcp_core::auth::Requirement::scopes(["a"]).is_none());
    /// ```
    pub fn is_none(&self) -> bool {
        self.scopes.is_empty() && self.predicates.is_empty()
    }

    /// The scopes needed, in the order first given, without repeats.
    ///
    /// ```
    /// assert!(ferrymcp_core::auth::Requirement::none().required_scopes().is_empty());
    /// ```
    pub fn required_scopes(&self) -> &[String] {
        &self.scopes
    }

    /// Whether `principal` meets the requirement, scopes compared by `matcher`.
    ///
    /// ```
    /// use ferrymcp_core::auth::{ExactScopes, Principal, Requirement};
    /// let read = Requirement::scopes(["read"]);
    /// assert!(read.allows(Some(&Principal::new("c").with_scopes(["read"])), &ExactScopes));
    /// assert!(!read.allows(Some(&Principal::new("c")), &ExactScopes));
    /// ```
    pub fn allows(&self, principal: Option<&Principal>, matcher: &dyn ScopeMatcher) -> bool {
        if self.is_none() {
            return true;
        }
        let Some(principal) = principal else {
            return false;
        };
        self.scopes
            .iter()
            .all(|scope| matcher.covers(&principal.scopes, scope))
            && self.predicates.iter().all(|allowed| allowed(principal))
    }

    fn push_scope(&mut self, scope: String) {
        if !scope.is_empty() && !self.scopes.contains(&scope) {
            self.scopes.push(scope);
        }
    }
}

impl fmt::Debug for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Requirement")
            .field("scopes", &self.scopes)
            .field("predicates", &self.predicates.len())
            .finish()
    }
}

impl<const N: usize> From<[&str; N]> for Requirement {
    fn from(scopes: [&str; N]) -> Self {
        Self::scopes(scopes)
    }
}

impl From<&str> for Requirement {
    fn from(scope: &str) -> Self {
        Self::scopes([scope])
    }
}

/// Whether a caller may perform an operation, decided before it runs.
///
/// ```
/// use ferrymcp_core::auth::Access;
/// let denied = Access::Denied { scopes: vec!["child".into()] };
/// assert!(!denied.is_allowed());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Go ahead (also for a name nothing answers: dispatch reports it unknown).
    Allowed,
    /// Not with these credentials; `scopes` is every scope the operation needs (for the
    /// `insufficient_scope` challenge), possibly empty when a predicate said no.
    Denied {
        /// Every scope the operation needs.
        scopes: Vec<String>,
    },
}

impl Access {
    /// Whether the operation may go ahead.
    ///
    /// ```
    /// assert!(ferrymcp_core::auth::Access::Allowed.is_allowed());
    /// ```
    pub fn is_allowed(&self) -> bool {
        matches!(self, Self::Allowed)
    }
}

/// An operation to authorize before dispatch, as the HTTP layer sees it (from the
/// `Mcp-Method`/`Mcp-Name` headers, or from the body).
///
/// ```
/// use ferrymcp_core::auth::Operation;
/// let call = Operation::CallTool("child_multiply");
/// assert_eq!(call, Operation::CallTool("child_multiply"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation<'a> {
    /// `tools/call` of a tool, by its exposed name.
    CallTool(&'a str),
    /// `resources/read` of a URI (a resource or a template's match).
    ReadResource(&'a str),
    /// `prompts/get` of a prompt, by its exposed name.
    GetPrompt(&'a str),
    /// Any other method (listings, tasks, ping...): no component requirement applies.
    Other(&'a str),
}
