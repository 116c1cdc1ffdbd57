//! URI templates for MCP resource templates, and the namespacing of resource
//! URIs under a mount.
//!
//! A [`UriTemplate`] is the subset of [RFC 6570] that MCP servers use for
//! resource templates (`users://{user_id}/profile`). [`UriTemplate::matches`]
//! tests a concrete URI from `resources/read` against it and returns the bound
//! variables; [`UriTemplate::namespaced`], [`namespace_uri`] and
//! [`strip_namespace`] move templates and URIs in and out of a mount's
//! namespace.
//!
//! | Syntax | Matches | Notes |
//! | --- | --- | --- |
//! | literal text | itself, exactly | case-sensitive, no percent-decoding of literals |
//! | `{var}` | one or more characters other than `/`, `?`, `#` | `{a,b}` is `{a}` `,` `{b}` |
//! | `{var*}` | one or more characters, `/` included | FastMCP's path wildcard |
//! | `{+var}` | one or more characters, `/` included | reserved expansion; matches like `{var*}` |
//! | `{?a,b}` | the query string: any subset of `a`, `b`, in any order | only at the end of the template |
//! | `{&c}` | more query variables | after `{?…}` or after a literal `?` |
//! | literal `?k=v&…` | those query pairs must be present | may be followed by `{&…}` only |
//!
//! Matching rules, as in FastMCP:
//!
//! * The concrete URI is split at its first `?`. The part before it must match
//!   the template up to its query part, in full. A template without a query
//!   part ignores the URI's query string.
//! * Path variables are never empty. When a URI can be split between
//!   variables in more than one way, each variable, left to right, takes the
//!   longest value that still lets the rest match (like FastMCP's regular
//!   expressions: `{name}.json` binds `a.json` in `a.json.json`). Matching
//!   runs in time linear in the URI length per template part, without
//!   backtracking.
//! * Query parameters are parsed like Python's `parse_qs`: `+` is a space, a
//!   parameter with an empty value counts as absent, the first occurrence
//!   wins, and parameters the template does not name are ignored (lenient).
//!   A missing query variable is simply absent from the returned map; the
//!   caller applies defaults.
//! * Bound values are percent-decoded (`%20` → space, `%2F` → `/`); a
//!   malformed escape is kept as written and invalid UTF-8 becomes U+FFFD.
//!
//! Not supported, and rejected by [`UriTemplate::parse`] with a
//! [`UriTemplateError`]: the operators `#`, `.`, `/`, `;` (and the reserved
//! `=`, `,`, `!`, `@`, `|`), prefix modifiers (`{var:3}`), explode on query
//! variables (`{?list*}`), two variables with nothing between them
//! (`{a}{b}`: ambiguous), a variable used twice, and path expressions after
//! the query part.
//!
//! Namespacing (a mount's namespace goes into resource URIs, not names):
//!
//! | Rule | Example |
//! | --- | --- |
//! | the namespace becomes the first path segment after `scheme://` | `data://users` under `data` → `data://data/users` |
//! | templates the same way, and their variables still bind | `users://{user_id}/profile` under `api` → `users://api/{user_id}/profile` |
//! | an empty authority keeps its slash | `data:///config` under `child` → `data://child//config` |
//! | an empty namespace changes nothing | `data://users` under `` → `data://users` |
//! | nesting puts the outer namespace first | `leaf://data` under `leaf`, then `middle` → `leaf://middle/leaf/data` |
//!
//! A URI without `scheme://` (which FastMCP rejects) gets `namespace/` in
//! front, so that [`strip_namespace`] can still invert it. The scheme is
//! anything non-empty before the first `:` without `/`, `?`, `#`, `{` or `}`
//! (as lenient as FastMCP's `[^:]+://`). Namespaces are expected to be plain
//! names; one containing `{`, `}` or `?` gives templates whose text no
//! longer parses back to the same template.
//!
//! ```rust
//! use ferrymcp_core::uri_template::{UriTemplate, namespace_uri, strip_namespace};
//!
//! let template = UriTemplate::parse("users://{user_id}/profile")?;
//! let mounted = template.namespaced("api");
//! assert_eq!(mounted.as_str(), "users://api/{user_id}/profile");
//!
//! let vars = mounted.matches("users://api/123/profile").unwrap();
//! assert_eq!(vars["user_id"], "123");
//!
//! let uri = namespace_uri("data:///config", "child");
//! assert_eq!(uri, "data://child//config");
//! assert_eq!(strip_namespace(&uri, "child").as_deref(), Some("data:///config"));
//! # Ok::<(), ferrymcp_core::uri_template::UriTemplateError>(())
//! ```
//!
//! [RFC 6570]: https://www.rfc-editor.org/rfc/rfc6570

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// Why a string is not a supported URI template.
///
/// Offsets are byte offsets into the template string.
///
/// ```rust
/// use ferrymcp_core::uri_template::{UriTemplate, UriTemplateError};
///
/// assert_eq!(
///     UriTemplate::parse("users://{id"),
///     Err(UriTemplateError::UnclosedBrace { offset: 8 })
/// );
/// assert_eq!(
///     UriTemplate::parse("file://{/path}"),
///     Err(UriTemplateError::Unsupported("/".to_string()))
/// );
/// let err = UriTemplate::parse("x://{a}/{a}").unwrap_err();
/// assert_eq!(err.to_string(), "variable `a` appears more than once in the URI template");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UriTemplateError {
    /// A `{` without a matching `}` (or with another `{` before it).
    #[error("unclosed `{{` at byte {offset} in the URI template")]
    UnclosedBrace {
        /// Where the `{` is.
        offset: usize,
    },
    /// A `}` outside an expression.
    #[error("unmatched `}}` at byte {offset} in the URI template")]
    UnmatchedBrace {
        /// Where the `}` is.
        offset: usize,
    },
    /// An expression with an empty variable name: `{}`, `{?}`, `{a,}`, `{*}`.
    #[error("empty variable name in the expression at byte {offset} of the URI template")]
    EmptyVariableName {
        /// Where the expression's `{` is.
        offset: usize,
    },
    /// A variable name outside RFC 6570's `varname` (ASCII letters, digits,
    /// `_`, percent-escapes, and single `.` between them).
    #[error("invalid variable name `{name}` in the URI template")]
    InvalidVariableName {
        /// The rejected name, as written.
        name: String,
    },
    /// An RFC 6570 operator this matcher does not support: `#`, `.`, `/`,
    /// `;`, or one of the reserved `=`, `,`, `!`, `@`, `|`.
    #[error("unsupported URI template operator `{0}` (supported: none, `+`, `?`, `&`)")]
    Unsupported(String),
    /// A prefix modifier (`{var:3}`), or explode on a query variable
    /// (`{?list*}`).
    #[error("unsupported modifier `{modifier}` on variable `{name}` in the URI template")]
    UnsupportedModifier {
        /// The variable the modifier is on.
        name: String,
        /// The modifier as written: `*` or `:3`.
        modifier: String,
    },
    /// The same variable name appears twice.
    #[error("variable `{0}` appears more than once in the URI template")]
    DuplicateVariable(String),
    /// Two path variables with no literal between them (`{a}{b}`), which
    /// cannot be split unambiguously.
    #[error(
        "variables `{first}` and `{second}` are adjacent in the URI template; put a literal between them"
    )]
    AdjacentVariables {
        /// The first variable.
        first: String,
        /// The variable right after it.
        second: String,
    },
    /// The query part is not at the end, or is started twice, or `{&…}` has no
    /// query to continue.
    #[error("misplaced query at byte {offset} of the URI template: {reason}")]
    MisplacedQuery {
        /// Where the offending expression or literal is.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
}

/// How a path variable matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VarKind {
    /// `{var}`: no `/`, `?`, `#`.
    Simple,
    /// `{var*}` or `{+var}`: anything, `/` included.
    Spanning,
}

/// One piece of the path part of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Text matched exactly. Never empty; never two in a row.
    Literal(String),
    /// A variable. Never two in a row.
    Var { name: String, kind: VarKind },
}

/// The query part of a template: everything from the first `?`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct QuerySpec {
    /// Pairs from a literal query (`?format=json`), percent-decoded; each must
    /// be present in the URI.
    fixed: Vec<(String, String)>,
    /// Variables from `{?…}` and `{&…}`, in order.
    vars: Vec<String>,
}

/// A parsed RFC 6570 URI template (the subset MCP servers use).
///
/// See the [module documentation](self) for the supported syntax and the
/// matching rules. Templates parsed from the same text are equal.
///
/// ```rust
/// use ferrymcp_core::uri_template::UriTemplate;
///
/// let t = UriTemplate::parse("weather://{city}/forecast{?days,units}")?;
/// assert_eq!(t.variables(), ["city", "days", "units"]);
///
/// let vars = t.matches("weather://Paris/forecast?units=metric").unwrap();
/// assert_eq!(vars["city"], "Paris");
/// assert_eq!(vars["units"], "metric");
/// assert!(!vars.contains_key("days")); // the caller applies the default
///
/// assert!(t.matches("weather://Paris/today").is_none());
/// # Ok::<(), ferrymcp_core::uri_template::UriTemplateError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    raw: String,
    path: Vec<Part>,
    query: Option<QuerySpec>,
}

impl UriTemplate {
    /// Parses a template.
    ///
    /// ```rust
    /// use ferrymcp_core::uri_template::{UriTemplate, UriTemplateError};
    ///
    /// let t = UriTemplate::parse("resource://multi/{extra*}")?;
    /// assert_eq!(t.as_str(), "resource://multi/{extra*}");
    ///
    /// assert_eq!(
    ///     UriTemplate::parse("x://{}"),
    ///     Err(UriTemplateError::EmptyVariableName { offset: 4 })
    /// );
    /// assert_eq!(
    ///     UriTemplate::parse("x://{#frag}"),
    ///     Err(UriTemplateError::Unsupported("#".to_string()))
    /// );
    /// # Ok::<(), UriTemplateError>(())
    /// ```
    pub fn parse(raw: &str) -> Result<UriTemplate, UriTemplateError> {
        let mut builder = Builder::default();
        for token in tokenize(raw)? {
            builder.push(token)?;
        }
        let (path, query) = builder.finish()?;
        Ok(UriTemplate {
            raw: raw.to_string(),
            path,
            query,
        })
    }

    /// The template as written.
    ///
    /// ```rust
    /// use ferrymcp_core::uri_template::UriTemplate;
    ///
    /// let t = UriTemplate::parse("users://{id}/profile")?;
    /// assert_eq!(t.as_str(), "users://{id}/profile");
    /// assert_eq!(t.to_string(), "users://{id}/profile");
    /// # Ok::<(), ferrymcp_core::uri_template::UriTemplateError>(())
    /// ```
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// Variable names in order of appearance (path and query).
    ///
    /// ```rust
    /// use ferrymcp_core::uri_template::UriTemplate;
    ///
    /// let t = UriTemplate::parse("repo://{owner}/{name}/{path*}{?ref}")?;
    /// assert_eq!(t.variables(), ["owner", "name", "path", "ref"]);
    /// assert!(UriTemplate::parse("data://config")?.variables().is_empty());
    /// # Ok::<(), ferrymcp_core::uri_template::UriTemplateError>(())
    /// ```
    pub fn variables(&self) -> Vec<&str> {
        let path = self.path.iter().filter_map(|part| match part {
            Part::Var { name, .. } => Some(name.as_str()),
            Part::Literal(_) => None,
        });
        let query = self
            .query
            .iter()
            .flat_map(|q| q.vars.iter().map(String::as_str));
        path.chain(query).collect()
    }

    /// Matches a concrete URI; returns the bound variables (values
    /// percent-decoded), or `None`.
    ///
    /// Query variables the URI does not give are absent from the map; query
    /// parameters the template does not name are ignored.
    ///
    /// ```rust
    /// use ferrymcp_core::uri_template::UriTemplate;
    ///
    /// let t = UriTemplate::parse("files://{dir}/{name}")?;
    /// let vars = t.matches("files://docs/read%20me.txt").unwrap();
    /// assert_eq!(vars["dir"], "docs");
    /// assert_eq!(vars["name"], "read me.txt");
    /// assert!(t.matches("files://docs/a/b.txt").is_none()); // `{name}` stops at `/`
    ///
    /// let wild = UriTemplate::parse("files://{path*}")?;
    /// assert_eq!(wild.matches("files://docs/a/b.txt").unwrap()["path"], "docs/a/b.txt");
    ///
    /// let greet = UriTemplate::parse("resource://greet{?name}")?;
    /// assert_eq!(greet.matches("resource://greet?name=Alice").unwrap()["name"], "Alice");
    /// assert!(greet.matches("resource://greet").unwrap().is_empty());
    /// # Ok::<(), ferrymcp_core::uri_template::UriTemplateError>(())
    /// ```
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let (path, query) = match uri.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (uri, None),
        };
        let mut vars = BTreeMap::new();
        for (name, value) in match_path(&self.path, path)? {
            vars.insert(name.to_string(), percent_decode(value, false));
        }
        if let Some(spec) = &self.query {
            let pairs = query.map(parse_query).unwrap_or_default();
            let all_fixed_present = spec
                .fixed
                .iter()
                .all(|(k, v)| pairs.iter().any(|(pk, pv)| pk == k && pv == v));
            if !all_fixed_present {
                return None;
            }
            for name in &spec.vars {
                let value = pairs
                    .iter()
                    .find(|(k, v)| k == name && !v.is_empty())
                    .map(|(_, v)| v.clone());
                if let Some(value) = value {
                    vars.insert(name.clone(), value);
                }
            }
        }
        Some(vars)
    }

    /// The template with `namespace` inserted as the first path segment after
    /// `scheme://`: `users://{id}/profile` under `api` becomes
    /// `users://api/{id}/profile`. `data:///config` (empty authority) becomes
    /// `data://api//config`. An empty namespace changes nothing.
    ///
    /// The result matches exactly the URIs that [`namespace_uri`] makes from
    /// the URIs this template matches, with the same bindings.
    ///
    /// ```rust
    /// use ferrymcp_core::uri_template::{UriTemplate, namespace_uri};
    ///
    /// let t = UriTemplate::parse("leaf://item/{id}")?;
    /// let mounted = t.namespaced("leaf").namespaced("middle"); // outer first
    /// assert_eq!(mounted.as_str(), "leaf://middle/leaf/item/{id}");
    /// let uri = namespace_uri(&namespace_uri("leaf://item/99", "leaf"), "middle");
    /// assert_eq!(mounted.matches(&uri).unwrap()["id"], "99");
    ///
    /// let config = UriTemplate::parse("data:///config")?;
    /// assert_eq!(config.namespaced("api").as_str(), "data://api//config");
    /// assert_eq!(config.namespaced(""), config);
    /// # Ok::<(), ferrymcp_core::uri_template::UriTemplateError>(())
    /// ```
    pub fn namespaced(&self, namespace: &str) -> UriTemplate {
        if namespace.is_empty() {
            return self.clone();
        }
        let segment = format!("{namespace}/");
        let mut path = self.path.clone();
        match path.first_mut() {
            Some(Part::Literal(first)) => {
                // The scheme contains no `{`, so `scheme://` of the raw text, if
                // any, lies inside the first literal: the same insertion point.
                let at = authority_start(first).unwrap_or(0);
                first.insert_str(at, &segment);
            }
            _ => path.insert(0, Part::Literal(segment)),
        }
        UriTemplate {
            raw: namespace_uri(&self.raw, namespace),
            path,
            query: self.query.clone(),
        }
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl FromStr for UriTemplate {
    type Err = UriTemplateError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        UriTemplate::parse(s)
    }
}

/// Namespaces a concrete URI: `namespace` becomes the first path
/// segment after `scheme://`. `data://users` under `data` becomes
/// `data://data/users`; `resource://my_resource` under `prefix` becomes
/// `resource://prefix/my_resource`; `data:///config` under `child` becomes
/// `data://child//config`. An empty namespace changes nothing.
/// A URI without `scheme://` gets `namespace/` in front.
///
/// ```rust
/// use ferrymcp_core::uri_template::namespace_uri;
///
/// assert_eq!(namespace_uri("data://users", "data"), "data://data/users");
/// assert_eq!(namespace_uri("resource://my_resource", "prefix"), "resource://prefix/my_resource");
/// assert_eq!(namespace_uri("data:///config", "child"), "data://child//config");
/// assert_eq!(namespace_uri("leaf://data", ""), "leaf://data");
/// // nested mounts apply the inner namespace first, so the outer one ends up first.
/// assert_eq!(namespace_uri(&namespace_uri("leaf://data", "leaf"), "middle"), "leaf://middle/leaf/data");
/// ```
pub fn namespace_uri(uri: &str, namespace: &str) -> String {
    if namespace.is_empty() {
        return uri.to_string();
    }
    let at = authority_start(uri).unwrap_or(0);
    let (head, rest) = uri.split_at_checked(at).unwrap_or(("", uri));
    let mut out = String::with_capacity(uri.len() + namespace.len() + 1);
    out.push_str(head);
    out.push_str(namespace);
    out.push('/');
    out.push_str(rest);
    out
}

/// The inverse of [`namespace_uri`]: if `uri` lies in `namespace`
/// (`scheme://namespace/rest`), the URI without it (`scheme://rest`); else
/// `None`. With an empty namespace every URI is in it, unchanged.
///
/// Whenever this returns `Some(inner)`, `namespace_uri(&inner, namespace)` is
/// exactly `uri`, and `strip_namespace(&namespace_uri(u, ns), ns)` is
/// `Some(u)` for every `u` and every plain-name `ns`.
///
/// ```rust
/// use ferrymcp_core::uri_template::strip_namespace;
///
/// assert_eq!(strip_namespace("data://data/users", "data").as_deref(), Some("data://users"));
/// assert_eq!(strip_namespace("data://child//config", "child").as_deref(), Some("data:///config"));
/// assert_eq!(strip_namespace("leaf://middle/leaf/data", "middle").as_deref(), Some("leaf://leaf/data"));
/// assert_eq!(strip_namespace("data://other/users", "data"), None);
/// assert_eq!(strip_namespace("data://database/x", "data"), None); // whole segments only
/// ```
pub fn strip_namespace(uri: &str, namespace: &str) -> Option<String> {
    if namespace.is_empty() {
        return Some(uri.to_string());
    }
    let verify = |inner: String| (namespace_uri(&inner, namespace) == uri).then_some(inner);
    let hierarchical = authority_start(uri).and_then(|at| {
        let (head, rest) = uri.split_at_checked(at)?;
        let tail = rest.strip_prefix(namespace)?.strip_prefix('/')?;
        verify(format!("{head}{tail}"))
    });
    hierarchical.or_else(|| {
        let tail = uri.strip_prefix(namespace)?.strip_prefix('/')?;
        verify(tail.to_string())
    })
}

/// The byte index just after `scheme://`, if `s` starts with one. The scheme
/// is the non-empty text before the first `:`, without `/ ? # { }`.
fn authority_start(s: &str) -> Option<usize> {
    let colon = s.find(':')?;
    let scheme = s.get(..colon)?;
    let valid = !scheme.is_empty() && !scheme.contains(['/', '?', '#', '{', '}']);
    let rest = s.get(colon..)?;
    (valid && rest.starts_with("://")).then_some(colon + 3)
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

/// One variable of an expression, as written.
#[derive(Debug)]
struct VarSpec {
    name: String,
    explode: bool,
}

/// A lexical piece of a template.
#[derive(Debug)]
enum Token {
    Literal {
        text: String,
        offset: usize,
    },
    Expr {
        op: Op,
        vars: Vec<VarSpec>,
        offset: usize,
    },
}

/// The supported expression operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Simple,
    Reserved,
    Query,
    QueryContinuation,
}

fn tokenize(raw: &str) -> Result<Vec<Token>, UriTemplateError> {
    let mut tokens = Vec::new();
    let mut literal_start = 0;
    let mut chars = raw.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '}' => return Err(UriTemplateError::UnmatchedBrace { offset: i }),
            '{' => {
                if let Some(text) = raw.get(literal_start..i).filter(|t| !t.is_empty()) {
                    tokens.push(Token::Literal {
                        text: text.to_string(),
                        offset: literal_start,
                    });
                }
                let mut close = None;
                for (j, d) in chars.by_ref() {
                    match d {
                        '}' => {
                            close = Some(j);
                            break;
                        }
                        '{' => return Err(UriTemplateError::UnclosedBrace { offset: i }),
                        _ => {}
                    }
                }
                let close = close.ok_or(UriTemplateError::UnclosedBrace { offset: i })?;
                let body = raw.get(i + 1..close).unwrap_or_default();
                tokens.push(parse_expression(body, i)?);
                literal_start = close + 1;
            }
            _ => {}
        }
    }
    if let Some(text) = raw.get(literal_start..).filter(|t| !t.is_empty()) {
        tokens.push(Token::Literal {
            text: text.to_string(),
            offset: literal_start,
        });
    }
    Ok(tokens)
}

/// Parses the inside of `{…}`; `offset` is where the `{` is.
fn parse_expression(body: &str, offset: usize) -> Result<Token, UriTemplateError> {
    let mut rest = body;
    let op = match body.chars().next() {
        Some('+') => Op::Reserved,
        Some('?') => Op::Query,
        Some('&') => Op::QueryContinuation,
        Some(c @ ('#' | '.' | '/' | ';' | '=' | ',' | '!' | '@' | '|')) => {
            return Err(UriTemplateError::Unsupported(c.to_string()));
        }
        _ => Op::Simple,
    };
    if op != Op::Simple {
        rest = body.get(1..).unwrap_or_default();
    }
    let mut vars = Vec::new();
    for spec in rest.split(',') {
        let (name, modifier) = match spec.find([':', '*']) {
            Some(at) => (
                spec.get(..at).unwrap_or_default(),
                spec.get(at..).unwrap_or_default(),
            ),
            None => (spec, ""),
        };
        if name.is_empty() {
            return Err(UriTemplateError::EmptyVariableName { offset });
        }
        if !is_valid_varname(name) {
            return Err(UriTemplateError::InvalidVariableName {
                name: name.to_string(),
            });
        }
        let explode = match modifier {
            "" => false,
            "*" if matches!(op, Op::Simple | Op::Reserved) => true,
            "*" => {
                return Err(UriTemplateError::UnsupportedModifier {
                    name: name.to_string(),
                    modifier: modifier.to_string(),
                });
            }
            m if is_prefix_modifier(m) => {
                return Err(UriTemplateError::UnsupportedModifier {
                    name: name.to_string(),
                    modifier: modifier.to_string(),
                });
            }
            _ => {
                return Err(UriTemplateError::InvalidVariableName {
                    name: spec.to_string(),
                });
            }
        };
        vars.push(VarSpec {
            name: name.to_string(),
            explode,
        });
    }
    Ok(Token::Expr { op, vars, offset })
}

/// `:` followed by 1–4 digits (RFC 6570 `prefix`).
fn is_prefix_modifier(m: &str) -> bool {
    m.strip_prefix(':')
        .is_some_and(|d| (1..=4).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()))
}

/// RFC 6570 `varname`: `varchar *( ["."] varchar )`, `varchar = ALPHA / DIGIT
/// / "_" / pct-encoded`.
fn is_valid_varname(name: &str) -> bool {
    let b = name.as_bytes();
    let mut i = 0;
    let mut previous_dot = true; // no leading dot
    while let Some(&c) = b.get(i) {
        match c {
            b'.' if previous_dot => return false,
            b'.' => previous_dot = true,
            b'%' => {
                let hex = |k: usize| b.get(k).is_some_and(u8::is_ascii_hexdigit);
                if !(hex(i + 1) && hex(i + 2)) {
                    return false;
                }
                previous_dot = false;
                i += 2;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' => previous_dot = false,
            _ => return false,
        }
        i += 1;
    }
    !previous_dot // no trailing dot, not empty
}

/// Assembles tokens into path parts and a query spec.
#[derive(Default)]
struct Builder {
    path: Vec<Part>,
    /// The query part, once a literal `?` or `{?…}` has started it.
    query: Option<QuerySpec>,
    /// Literal query text (after the first literal `?`), with its offset.
    query_literal: Vec<(String, usize)>,
    /// Whether the last token was an expression in the query part.
    after_query_expr: bool,
    names: Vec<String>,
}

impl Builder {
    fn push(&mut self, token: Token) -> Result<(), UriTemplateError> {
        match token {
            Token::Literal { text, offset } => self.push_literal(text, offset),
            Token::Expr { op, vars, offset } => self.push_expr(op, vars, offset),
        }
    }

    fn push_literal(&mut self, text: String, offset: usize) -> Result<(), UriTemplateError> {
        if self.query.is_some() {
            if self.after_query_expr && !text.starts_with('&') {
                return Err(UriTemplateError::MisplacedQuery {
                    offset,
                    reason: "text after a query expression must be more `&name=value` pairs",
                });
            }
            self.after_query_expr = false;
            self.query_literal.push((text, offset));
            return Ok(());
        }
        match text.split_once('?') {
            Some((path, query)) => {
                self.push_path_literal(path);
                self.query = Some(QuerySpec::default());
                self.query_literal.push((query.to_string(), offset));
            }
            None => self.push_path_literal(&text),
        }
        Ok(())
    }

    fn push_path_literal(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(Part::Literal(last)) = self.path.last_mut() {
            last.push_str(text);
        } else {
            self.path.push(Part::Literal(text.to_string()));
        }
    }

    fn push_expr(
        &mut self,
        op: Op,
        vars: Vec<VarSpec>,
        offset: usize,
    ) -> Result<(), UriTemplateError> {
        for var in &vars {
            if self.names.contains(&var.name) {
                return Err(UriTemplateError::DuplicateVariable(var.name.clone()));
            }
            self.names.push(var.name.clone());
        }
        match op {
            Op::Simple | Op::Reserved => {
                if self.query.is_some() {
                    return Err(UriTemplateError::MisplacedQuery {
                        offset,
                        reason: "only `{&…}` expressions may follow the start of the query",
                    });
                }
                for (k, var) in vars.into_iter().enumerate() {
                    if k > 0 {
                        self.push_path_literal(",");
                    }
                    let kind = if op == Op::Reserved || var.explode {
                        VarKind::Spanning
                    } else {
                        VarKind::Simple
                    };
                    if let Some(Part::Var { name: first, .. }) = self.path.last() {
                        return Err(UriTemplateError::AdjacentVariables {
                            first: first.clone(),
                            second: var.name,
                        });
                    }
                    self.path.push(Part::Var {
                        name: var.name,
                        kind,
                    });
                }
            }
            Op::Query | Op::QueryContinuation => {
                let query = match (&mut self.query, op) {
                    (Some(_), Op::Query) => {
                        return Err(UriTemplateError::MisplacedQuery {
                            offset,
                            reason: "the query has already started; use `{&…}` to add variables",
                        });
                    }
                    (None, Op::QueryContinuation) => {
                        return Err(UriTemplateError::MisplacedQuery {
                            offset,
                            reason: "`{&…}` needs a query started by `?` or `{?…}` before it",
                        });
                    }
                    (query, _) => query.get_or_insert_with(QuerySpec::default),
                };
                query.vars.extend(vars.into_iter().map(|v| v.name));
                self.after_query_expr = true;
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<(Vec<Part>, Option<QuerySpec>), UriTemplateError> {
        let mut query = self.query;
        if let Some(spec) = &mut query {
            for (text, _) in &self.query_literal {
                spec.fixed.extend(parse_query(text));
            }
        }
        Ok((self.path, query))
    }
}

// ---------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------

/// Matches `s` in full against `parts`; returns each variable's raw
/// (undecoded) value.
///
/// Works backwards first: `reach[i][p]` says whether `parts[i..]` can match
/// `s[p..]`. Then walks forwards, giving each variable the longest value that
/// keeps the rest matchable. Each pass is linear in `s` per part (times the
/// literal's length for literals); there is no backtracking.
fn match_path<'p, 's>(parts: &'p [Part], s: &'s str) -> Option<Vec<(&'p str, &'s str)>> {
    let b = s.as_bytes();
    let n = b.len();

    // Cheap rejections before allocating: a template that is all literal, a
    // URI shorter than the template's shortest match, or a first literal that
    // is not a prefix or last literal not a suffix.
    if let [Part::Literal(only)] = parts {
        return (only == s).then(Vec::new);
    }
    if parts.is_empty() {
        return s.is_empty().then(Vec::new);
    }
    let shortest: usize = parts
        .iter()
        .map(|part| match part {
            Part::Literal(lit) => lit.len(),
            Part::Var { .. } => 1,
        })
        .sum();
    if shortest > n {
        return None;
    }
    if let Some(Part::Literal(first)) = parts.first()
        && !s.starts_with(first.as_str())
    {
        return None;
    }
    if let Some(Part::Literal(last)) = parts.last()
        && !s.ends_with(last.as_str())
    {
        return None;
    }

    // stop[p]: the first index >= p holding a byte a simple variable cannot
    // contain, or n.
    let mut stop = vec![n; n + 1];
    for p in (0..n).rev() {
        let here = b.get(p).is_some_and(|c| matches!(c, b'/' | b'?' | b'#'));
        let next = stop.get(p + 1).copied().unwrap_or(n);
        if let Some(slot) = stop.get_mut(p) {
            *slot = if here { p } else { next };
        }
    }
    let limit = |kind: VarKind, p: usize| match kind {
        VarKind::Simple => stop.get(p).copied().unwrap_or(n),
        VarKind::Spanning => n,
    };

    let mut reach = vec![vec![false; n + 1]; parts.len() + 1];
    if let Some(end) = reach.last_mut().and_then(|r| r.last_mut()) {
        *end = true;
    }
    for i in (0..parts.len()).rev() {
        let (head, tail) = reach.split_at_mut(i + 1);
        let (Some(cur), Some(next), Some(part)) = (head.last_mut(), tail.first(), parts.get(i))
        else {
            return None;
        };
        match part {
            Part::Literal(lit) => {
                let lb = lit.as_bytes();
                for (p, slot) in cur.iter_mut().enumerate() {
                    let end = p + lb.len();
                    *slot = next.get(end).copied().unwrap_or(false) && b.get(p..end) == Some(lb);
                }
            }
            Part::Var { kind, .. } => {
                // nearest: the smallest q > p where the rest can match.
                let mut nearest: Option<usize> = None;
                for p in (0..=n).rev() {
                    let ok = nearest.is_some_and(|q| q <= limit(*kind, p));
                    if let Some(slot) = cur.get_mut(p) {
                        *slot = ok;
                    }
                    if next.get(p).copied().unwrap_or(false) {
                        nearest = Some(p);
                    }
                }
            }
        }
    }
    if !reach
        .first()
        .and_then(|r| r.first())
        .copied()
        .unwrap_or(false)
    {
        return None;
    }

    let mut bound = Vec::new();
    let mut p = 0;
    for (i, part) in parts.iter().enumerate() {
        match part {
            Part::Literal(lit) => p += lit.len(),
            Part::Var { name, kind } => {
                let next = reach.get(i + 1)?;
                let q = (p + 1..=limit(*kind, p))
                    .rev()
                    .find(|&q| next.get(q).copied().unwrap_or(false))?;
                bound.push((name.as_str(), s.get(p..q)?));
                p = q;
            }
        }
    }
    (p == n).then_some(bound)
}

/// Splits a query string into percent-decoded `(key, value)` pairs, like
/// Python's `parse_qsl(keep_blank_values=True)`: `&`-separated, `+` is a
/// space, a pair without `=` has an empty value, empty pieces are skipped.
fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|piece| !piece.is_empty())
        .map(|piece| {
            let (k, v) = piece.split_once('=').unwrap_or((piece, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect()
}

/// Decodes `%XX` escapes (and `+` as a space if `plus_is_space`). A malformed
/// escape is kept as written; invalid UTF-8 becomes U+FFFD.
fn percent_decode(s: &str, plus_is_space: bool) -> String {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    if plus_is_space && s.contains('+') {
        // Before decoding, so that an escaped `+` (`%2B`) stays a plus.
        return decode(&s.replace('+', " "));
    }
    decode(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(raw: &str) -> UriTemplate {
        match UriTemplate::parse(raw) {
            Ok(t) => t,
            Err(e) => panic!("{raw:?} should parse: {e}"),
        }
    }

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a04_namespace_uri() {
        assert_eq!(namespace_uri("data://users", "data"), "data://data/users");
        assert_eq!(
            namespace_uri("resource://my_resource", "prefix"),
            "resource://prefix/my_resource"
        );
        assert_eq!(
            namespace_uri("file:///tmp/x.txt", "fs"),
            "file://fs//tmp/x.txt"
        );
        assert_eq!(
            namespace_uri("https://example.com/a?b=c", "web"),
            "https://web/example.com/a?b=c"
        );
        assert_eq!(namespace_uri("my_app://thing", "ns"), "my_app://ns/thing");
        // Not `scheme://`: FastMCP raises; we prefix, and stay invertible.
        assert_eq!(namespace_uri("plain-name", "ns"), "ns/plain-name");
        assert_eq!(namespace_uri("urn:isbn:123", "ns"), "ns/urn:isbn:123");
        assert_eq!(namespace_uri("", "ns"), "ns/");
    }

    #[test]
    fn a05_template_namespaced_still_binds() {
        let template = t("users://{user_id}/profile");
        let mounted = template.namespaced("api");
        assert_eq!(mounted.as_str(), "users://api/{user_id}/profile");
        assert_eq!(mounted.variables(), ["user_id"]);
        assert_eq!(
            mounted.matches("users://api/123/profile"),
            Some(vars(&[("user_id", "123")]))
        );
        assert_eq!(mounted.matches("users://123/profile"), None);
        assert_eq!(mounted, t("users://api/{user_id}/profile"));

        // Every namespaced template re-parses to itself and matches exactly
        // the namespaced URIs, with the same bindings.
        let cases = [
            ("users://{id}/profile", "users://7/profile"),
            ("data:///config", "data:///config"),
            ("data:///{key}", "data:///k"),
            ("res://{a}.{b}", "res://x.y.z"),
            ("resource://greet{?name}", "resource://greet?name=Al"),
            ("res://x?format=json{&page}", "res://x?page=2&format=json"),
            ("{scheme}://x", "s://x"),
            ("{id}", "42"),
            ("no-scheme/{id}", "no-scheme/42"),
            ("{?q}", "?q=1"),
        ];
        for ns in ["api", "a.b-c_d"] {
            for (raw, uri) in cases {
                let plain = t(raw);
                let mounted = plain.namespaced(ns);
                assert_eq!(
                    UriTemplate::parse(mounted.as_str()).as_ref(),
                    Ok(&mounted),
                    "{raw} under {ns}"
                );
                assert_eq!(mounted.as_str(), namespace_uri(raw, ns));
                let inner = plain.matches(uri);
                assert!(inner.is_some(), "{raw} should match {uri}");
                // `{scheme}://x` is the one case where the scheme is a variable:
                // the template gets `ns/` in front, the URI does not.
                if raw.starts_with("{scheme}") {
                    continue;
                }
                assert_eq!(
                    mounted.matches(&namespace_uri(uri, ns)),
                    inner,
                    "{raw} under {ns}"
                );
            }
        }
    }

    #[test]
    fn a06_empty_authority_keeps_slash() {
        assert_eq!(
            namespace_uri("data:///config", "child"),
            "data://child//config"
        );
        let template = t("data:///config");
        let mounted = template.namespaced("api");
        assert_eq!(mounted.as_str(), "data://api//config");
        assert_eq!(mounted.matches("data://api//config"), Some(BTreeMap::new()));
        assert_eq!(mounted.matches("data://api/config"), None);
        let with_var = t("data:///{key}").namespaced("child");
        assert_eq!(with_var.as_str(), "data://child//{key}");
        assert_eq!(
            with_var.matches("data://child//x"),
            Some(vars(&[("key", "x")]))
        );
    }

    #[test]
    fn a07_wildcard_spans_slashes() {
        let template = t("resource://multi/{extra*}");
        assert_eq!(
            template.matches("resource://multi/abc/def"),
            Some(vars(&[("extra", "abc/def")]))
        );
        let mounted = template.namespaced("sub");
        assert_eq!(mounted.as_str(), "resource://sub/multi/{extra*}");
        assert_eq!(
            mounted.matches("resource://sub/multi/abc/def"),
            Some(vars(&[("extra", "abc/def")]))
        );
        assert_eq!(mounted.matches("resource://sub/multi/"), None); // never empty
        // The simple form does not span.
        assert_eq!(
            t("resource://multi/{extra}").matches("resource://multi/abc/def"),
            None
        );
        // Reserved expansion spans too.
        assert_eq!(
            t("file://{+path}").matches("file://a/b/c"),
            Some(vars(&[("path", "a/b/c")]))
        );
        // A wildcard takes the longest value that still lets the rest match.
        let both = t("repo://{path*}/blob/{file}");
        assert_eq!(
            both.matches("repo://a/blob/b/blob/c.rs"),
            Some(vars(&[("path", "a/blob/b"), ("file", "c.rs")]))
        );
        let two = t("x://{a*}/{b*}");
        assert_eq!(
            two.matches("x://1/2/3"),
            Some(vars(&[("a", "1/2"), ("b", "3")]))
        );
        let mid = t("x://{a*}/mid/{b}");
        assert_eq!(
            mid.matches("x://1/mid/2/mid/3"),
            Some(vars(&[("a", "1/mid/2"), ("b", "3")]))
        );
        assert_eq!(mid.matches("x://1/mid/2/3"), None);
    }

    #[test]
    fn a08_query_params_optional_and_partial() {
        let greet = t("resource://greet{?name}").namespaced("sub");
        assert_eq!(greet.as_str(), "resource://sub/greet{?name}");
        assert_eq!(
            greet.matches("resource://sub/greet?name=Alice"),
            Some(vars(&[("name", "Alice")]))
        );
        assert_eq!(greet.matches("resource://sub/greet"), Some(BTreeMap::new()));
        assert_eq!(
            greet.matches("resource://sub/greet?"),
            Some(BTreeMap::new())
        );
        assert_eq!(greet.matches("resource://sub/greeting?name=Alice"), None);

        let data = t("resource://data/{id}{?format,verbose}").namespaced("sub");
        assert_eq!(data.variables(), ["id", "format", "verbose"]);
        assert_eq!(
            data.matches("resource://sub/data/42?format=xml&verbose=True"),
            Some(vars(&[
                ("id", "42"),
                ("format", "xml"),
                ("verbose", "True")
            ]))
        );
        // Any order, unknown parameters ignored.
        assert_eq!(
            data.matches("resource://sub/data/42?verbose=True&debug=1&format=xml"),
            Some(vars(&[
                ("id", "42"),
                ("format", "xml"),
                ("verbose", "True")
            ]))
        );

        let items = t("resource://items{?limit,format}").namespaced("sub");
        assert_eq!(
            items.matches("resource://sub/items?limit=5"),
            Some(vars(&[("limit", "5")]))
        );

        // parse_qs rules: blank values are absent, the first value wins, `+` is a space.
        let q = t("q://s{?a,b,c}");
        assert_eq!(q.matches("q://s?a=&b&c=x"), Some(vars(&[("c", "x")])));
        assert_eq!(q.matches("q://s?a=1&a=2"), Some(vars(&[("a", "1")])));
        assert_eq!(q.matches("q://s?a=&a=2"), Some(vars(&[("a", "2")])));
        assert_eq!(
            q.matches("q://s?a=hello+world%21"),
            Some(vars(&[("a", "hello world!")]))
        );
        assert_eq!(q.matches("q://s?a=x=y"), Some(vars(&[("a", "x=y")])));

        // `{&…}` continues a query.
        let cont = t("q://s{?a}{&b}");
        assert_eq!(cont.variables(), ["a", "b"]);
        assert_eq!(cont.matches("q://s?b=2"), Some(vars(&[("b", "2")])));
        let fixed = t("q://s?format=json{&page}");
        assert_eq!(fixed.variables(), ["page"]);
        assert_eq!(
            fixed.matches("q://s?page=3&format=json"),
            Some(vars(&[("page", "3")]))
        );
        assert_eq!(fixed.matches("q://s?format=json"), Some(BTreeMap::new()));
        assert_eq!(fixed.matches("q://s?format=xml&page=3"), None);
        assert_eq!(fixed.matches("q://s"), None);

        // A template without a query part ignores the URI's query (as FastMCP).
        assert_eq!(
            t("x://{id}").matches("x://5?junk=1"),
            Some(vars(&[("id", "5")]))
        );
        assert_eq!(
            t("x://{id*}").matches("x://a/b?c=d"),
            Some(vars(&[("id", "a/b")]))
        );
    }

    #[test]
    fn a10_no_namespace_is_identity() {
        assert_eq!(namespace_uri("data://users", ""), "data://users");
        assert_eq!(
            strip_namespace("data://users", "").as_deref(),
            Some("data://users")
        );
        let template = t("users://{id}/profile");
        assert_eq!(template.namespaced(""), template);
    }

    #[test]
    fn a12_nested_namespaces_outer_first() {
        let uri = namespace_uri(&namespace_uri("leaf://data", "leaf"), "middle");
        assert_eq!(uri, "leaf://middle/leaf/data");
        let template = t("leaf://item/{id}")
            .namespaced("leaf")
            .namespaced("middle");
        assert_eq!(template.as_str(), "leaf://middle/leaf/item/{id}");
        assert_eq!(
            template.matches("leaf://middle/leaf/item/99"),
            Some(vars(&[("id", "99")]))
        );
        assert_eq!(template.matches("leaf://leaf/middle/item/99"), None);
        // Routing a read down the mounts strips the outer namespace first.
        let once = strip_namespace("leaf://middle/leaf/item/99", "middle");
        assert_eq!(once.as_deref(), Some("leaf://leaf/item/99"));
        let twice = once.and_then(|u| strip_namespace(&u, "leaf"));
        assert_eq!(twice.as_deref(), Some("leaf://item/99"));
        let deep = ["l3", "l2", "l1"]
            .iter()
            .fold("deep://x".to_string(), |u, ns| namespace_uri(&u, ns));
        assert_eq!(deep, "deep://l1/l2/l3/x");
    }

    #[test]
    fn strip_inverts_namespace() {
        let uris = [
            "data://users",
            "data:///config",
            "data://",
            "data:///",
            "resource://my_resource",
            "https://example.com/a/b?c=d#e",
            "plain-name",
            "urn:isbn:123",
            "",
            "/abs",
            "data://child//config",
            "weird://ns/ns/ns",
        ];
        for ns in ["child", "ns", "a.b", "x-y_z"] {
            for uri in uris {
                let namespaced = namespace_uri(uri, ns);
                assert_eq!(
                    strip_namespace(&namespaced, ns).as_deref(),
                    Some(uri),
                    "{uri} under {ns}"
                );
            }
        }
        assert_eq!(
            strip_namespace("data://child//config", "child").as_deref(),
            Some("data:///config")
        );
        // Not in the namespace.
        assert_eq!(strip_namespace("data://other/users", "child"), None);
        assert_eq!(strip_namespace("data://children/users", "child"), None);
        assert_eq!(strip_namespace("data://child", "child"), None);
        assert_eq!(strip_namespace("data://users", "data"), None); // `data` is the scheme here
        assert_eq!(strip_namespace("child", "child"), None);
        assert_eq!(strip_namespace("", "child"), None);
        // Whatever strip returns maps back to its input.
        for uri in ["ns/x", "s://ns/", "ns/s://y", "s://ns//", "ns/"] {
            if let Some(inner) = strip_namespace(uri, "ns") {
                assert_eq!(namespace_uri(&inner, "ns"), uri);
            }
        }
    }

    #[test]
    fn percent_decoding() {
        let template = t("files://{dir}/{name}");
        assert_eq!(
            template.matches("files://my%20docs/r%C3%A9sum%C3%A9.pdf"),
            Some(vars(&[("dir", "my docs"), ("name", "résumé.pdf")]))
        );
        // An escaped slash is not a separator, and decodes to `/`.
        assert_eq!(
            template.matches("files://a%2Fb/c"),
            Some(vars(&[("dir", "a/b"), ("name", "c")]))
        );
        // `+` in a path is not a space.
        assert_eq!(
            template.matches("files://a+b/c"),
            Some(vars(&[("dir", "a+b"), ("name", "c")]))
        );
        // Malformed escapes stay as written; invalid UTF-8 becomes U+FFFD.
        assert_eq!(
            template.matches("files://100%/x%zz%4"),
            Some(vars(&[("dir", "100%"), ("name", "x%zz%4")]))
        );
        assert_eq!(
            template.matches("files://%FF/x"),
            Some(vars(&[("dir", "\u{FFFD}"), ("name", "x")]))
        );
        // Query keys are decoded too.
        assert_eq!(
            t("q://s{?first.name}").matches("q://s?first%2Ename=Bo"),
            Some(vars(&[("first.name", "Bo")]))
        );
        // Literals are not decoded: they must match as written.
        assert_eq!(t("x://a b/{id}").matches("x://a%20b/1"), None);
        assert_eq!(
            t("x://a b/{id}").matches("x://a b/1"),
            Some(vars(&[("id", "1")]))
        );
        assert_eq!(percent_decode("%41%62%63", false), "Abc");
        assert_eq!(percent_decode("%", false), "%");
        assert_eq!(percent_decode("a+b", true), "a b");
        assert_eq!(percent_decode("a%2Bb+c", true), "a+b c");
    }

    #[test]
    fn no_match_cases() {
        let template = t("users://{id}/profile");
        for uri in [
            "",
            "users://",
            "users:///profile",    // empty variable
            "users://1/profile/",  // trailing text
            "users://1/2/profile", // `/` in a simple variable
            "Users://1/profile",   // case-sensitive
            "users://1/Profile",
            "users://1#x/profile", // `#` in a simple variable
            "other://1/profile",
            "users://1/profil",
            "xusers://1/profile",
        ] {
            assert_eq!(template.matches(uri), None, "{uri}");
        }
        assert_eq!(t("data://config").matches("data://config/"), None);
        assert_eq!(
            t("data://config").matches("data://config"),
            Some(BTreeMap::new())
        );
        assert_eq!(t("").matches(""), Some(BTreeMap::new()));
        assert_eq!(t("").matches("x"), None);
        // Greedy, like FastMCP's regular expressions.
        assert_eq!(
            t("x://{name}.json").matches("x://a.json.json"),
            Some(vars(&[("name", "a.json")]))
        );
        assert_eq!(
            t("x://{a}.{b}").matches("x://v1.2.3"),
            Some(vars(&[("a", "v1.2"), ("b", "3")]))
        );
        assert_eq!(
            t("x://{a},{b}").matches("x://1,2"),
            Some(vars(&[("a", "1"), ("b", "2")]))
        );
        assert_eq!(
            t("x://{a,b}").matches("x://1,2"),
            Some(vars(&[("a", "1"), ("b", "2")]))
        );
        assert_eq!(t("x://{a,b}").matches("x://12"), None);
        // Overlapping literal occurrences.
        assert_eq!(
            t("x://{a}aa").matches("x://aaaa"),
            Some(vars(&[("a", "aa")]))
        );
        assert_eq!(t("x://{a}aa").matches("x://aa"), None);
        // Unicode in literals and values.
        assert_eq!(
            t("ü://{x}é").matches("ü://日本é"),
            Some(vars(&[("x", "日本")]))
        );
        assert_eq!(t("ü://{x}é").matches("ü://日本e"), None);
    }

    #[test]
    fn parse_errors() {
        use UriTemplateError as E;
        let err = |raw: &str| UriTemplate::parse(raw).err();
        assert_eq!(err("x://{id"), Some(E::UnclosedBrace { offset: 4 }));
        assert_eq!(err("x://{a{b}"), Some(E::UnclosedBrace { offset: 4 }));
        assert_eq!(err("x://id}"), Some(E::UnmatchedBrace { offset: 6 }));
        assert_eq!(err("x://{}"), Some(E::EmptyVariableName { offset: 4 }));
        assert_eq!(err("x://{?}"), Some(E::EmptyVariableName { offset: 4 }));
        assert_eq!(err("x://{a,}"), Some(E::EmptyVariableName { offset: 4 }));
        assert_eq!(err("x://{*}"), Some(E::EmptyVariableName { offset: 4 }));
        for op in ["#", ".", "/", ";", "=", ",", "!", "@", "|"] {
            assert_eq!(
                err(&format!("x://{{{op}v}}")),
                Some(E::Unsupported(op.to_string())),
                "{op}"
            );
        }
        assert_eq!(
            err("x://{a:3}"),
            Some(E::UnsupportedModifier {
                name: "a".into(),
                modifier: ":3".into()
            })
        );
        assert_eq!(
            err("x://s{?list*}"),
            Some(E::UnsupportedModifier {
                name: "list".into(),
                modifier: "*".into()
            })
        );
        assert_eq!(
            err("x://{a**}"),
            Some(E::InvalidVariableName { name: "a**".into() })
        );
        assert_eq!(
            err("x://{a:x}"),
            Some(E::InvalidVariableName { name: "a:x".into() })
        );
        for bad in ["a b", " a", "a-b", "a.", "a..b", "%zz", "ß", "a/b"] {
            assert_eq!(
                err(&format!("x://{{{bad}}}")),
                Some(E::InvalidVariableName { name: bad.into() }),
                "{bad}"
            );
        }
        assert_eq!(
            err("x://s{?a, b}"),
            Some(E::InvalidVariableName { name: " b".into() })
        );
        assert_eq!(err("x://{a}/{a}"), Some(E::DuplicateVariable("a".into())));
        assert_eq!(err("x://{a}{?a}"), Some(E::DuplicateVariable("a".into())));
        assert_eq!(
            err("x://{a}{b}"),
            Some(E::AdjacentVariables {
                first: "a".into(),
                second: "b".into()
            })
        );
        assert_eq!(
            err("x://{a}{+b}"),
            Some(E::AdjacentVariables {
                first: "a".into(),
                second: "b".into()
            })
        );
        assert!(matches!(
            err("x://s{?a}/more"),
            Some(E::MisplacedQuery { offset: 9, .. })
        ));
        assert!(matches!(
            err("x://s{?a}{b}"),
            Some(E::MisplacedQuery { offset: 9, .. })
        ));
        assert!(matches!(
            err("x://s{?a}{?b}"),
            Some(E::MisplacedQuery { offset: 9, .. })
        ));
        assert!(matches!(
            err("x://s?k=v{?b}"),
            Some(E::MisplacedQuery { offset: 9, .. })
        ));
        assert!(matches!(
            err("x://s?k={v}"),
            Some(E::MisplacedQuery { offset: 8, .. })
        ));
        assert!(matches!(
            err("x://s{&b}"),
            Some(E::MisplacedQuery { offset: 5, .. })
        ));
        // Accepted.
        assert!(UriTemplate::parse("x://s{?a}&k=v{&b}").is_ok());
        assert!(UriTemplate::parse("x://{a.b}/{_c1}/{%41}").is_ok());
        assert!(UriTemplate::parse("").is_ok());
        assert!("x://{id}".parse::<UriTemplate>().is_ok());
        // Messages name the problem.
        assert_eq!(
            E::Unsupported("#".into()).to_string(),
            "unsupported URI template operator `#` (supported: none, `+`, `?`, `&`)"
        );
        assert!(
            E::UnclosedBrace { offset: 3 }
                .to_string()
                .contains("byte 3")
        );
    }

    #[test]
    fn never_panics() {
        let long = "a".repeat(10_000);
        let long_slashes = "a/".repeat(5_000);
        let long_braces = "{".repeat(10_000);
        let long_close = "}".repeat(10_000);
        let long_vars: String = (0..300).map(|i| format!("{{v{i}}}-")).collect();
        let inputs: Vec<String> = [
            "",
            "{",
            "}",
            "{}",
            "{{}}",
            "}{",
            "{?",
            "{?}",
            "{&}",
            "{+}",
            "{*}",
            "{a",
            "a}",
            "{a}{",
            "{:}",
            "{a:}",
            "{a:99999}",
            "{%}",
            "{%4}",
            "%",
            "%%",
            "%zz",
            "?",
            "??",
            "&",
            "=",
            "?&=&",
            "{?a}?",
            "://",
            ":",
            "a:",
            ":a://b",
            "x://",
            "x:///",
            "ü://日本/{x}",
            "\u{0}",
            "\u{FFFF}{x}\u{10FFFF}",
            "😀://😀/{e}😀",
            "x://{a*}{?b}",
            "x://{+a}?",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([
            long.clone(),
            long_slashes.clone(),
            long_braces,
            long_close,
            long_vars,
        ])
        .chain([
            format!("x://{{a}}{long}"),
            format!("{long}{{a*}}"),
            format!("x://{{a*}}/{{b*}}/{{c}}{long}"),
        ])
        .collect();

        let templates: Vec<UriTemplate> = inputs
            .iter()
            .filter_map(|raw| UriTemplate::parse(raw).ok())
            .chain(
                [
                    "x://{a*}/{b*}/{c}",
                    "{a}a{b}a{c}",
                    "{a*}",
                    "x://{a}{?b,c}",
                    "{a}😀{b*}",
                ]
                .iter()
                .map(|s| t(s)),
            )
            .collect();
        assert!(templates.len() > 8);
        let uris: Vec<String> = inputs
            .iter()
            .cloned()
            .chain([
                format!("x://{long_slashes}"),
                format!("x://{long}/{long}/{long}"),
                "😀😀😀a😀".to_string(),
                format!("x://{long}?b=%&c=%FF&{long}"),
            ])
            .collect();
        for template in &templates {
            let _ = template.variables();
            let _ = template.namespaced("ns").namespaced("");
            for uri in &uris {
                let _ = template.matches(uri);
            }
        }
        for a in &inputs {
            for ns in ["", "ns", "😀", "{", "a/b", ":", "x://"] {
                let namespaced = namespace_uri(a, ns);
                if let Some(inner) = strip_namespace(&namespaced, ns) {
                    assert_eq!(namespace_uri(&inner, ns), namespaced);
                }
                let _ = strip_namespace(a, ns);
            }
        }
        // Results on long inputs are still right.
        let wide = t("x://{a*}/{b*}/{c}");
        let uri = format!("x://{long}/{long}/{long}");
        let bound = wide.matches(&uri);
        assert_eq!(bound.as_ref().map(|m| m["c"].len()), Some(10_000));
        assert_eq!(
            t("{a}a{b}a{c}").matches(&long).map(|m| m["c"].len()),
            Some(1)
        );
    }
}
