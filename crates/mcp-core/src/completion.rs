//! Argument completion (`completion/complete`): suggestions for a prompt's arguments and a
//! resource template's variables while a user types them.
//!
//! A completer is an `async` function of a [`Completion`] (the argument's name, what was
//! typed so far, the arguments already filled in, and the request's [`Context`]) that
//! returns the suggestions: a `Vec` of strings, a [`Suggestions`] with a total and a
//! "more" flag, or a `Result` of either. Attach it to the argument with
//! [`PromptDef::complete`](crate::PromptDef::complete) or to the variable with
//! [`ResourceDef::complete`](crate::ResourceDef::complete). Mounted servers' completers
//! answer under their namespaced prompt names and template URIs, and the server advertises
//! the `completions` capability as soon as one of its prompts or templates, or one mounted
//! below it, has a completer.
//!
//! ```
//! use ferrymcp_core::{PromptDef, Server, completion::Completion};
//!
//! const CITIES: &[&str] = &["paris", "park city", "porto", "prague"];
//!
//! let server = Server::new("travel");
//! server
//!     .add_prompt(
//!         PromptDef::new("plan", || async { "Plan a trip" }).complete(
//!             "city",
//!             |c: Completion| async move { c.matching(CITIES.iter().copied()) },
//!         ),
//!     )
//!     .unwrap();
//! assert!(server.server_config().capabilities.completions.is_some());
//! ```

use std::{collections::HashMap, future::Future, sync::Arc};

use ferrymcp_types::CompletionInfo;

use crate::{BoxFuture, Context, ToolError};

/// The most suggestions one answer carries; a completer's longer list is cut here and
/// answered with `hasMore`.
pub const MAX_SUGGESTIONS: usize = CompletionInfo::MAX_VALUES;

/// What a completer is asked: which argument, what was typed so far, and the other
/// arguments the client has already resolved.
///
/// ```
/// use ferrymcp_core::completion::Completion;
/// async fn languages(c: Completion) -> Vec<String> {
///     c.matching(["rust", "ruby", "python"])
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Completion {
    argument: String,
    value: String,
    arguments: HashMap<String, String>,
    cx: Context,
}

impl Completion {
    pub(crate) fn new(
        argument: String,
        value: String,
        arguments: HashMap<String, String>,
        cx: Context,
    ) -> Self {
        Self {
            argument,
            value,
            arguments,
            cx,
        }
    }

    /// The name of the argument (or template variable) being completed.
    ///
    /// ```
    /// fn which(c: &ferrymcp_core::completion::Completion) -> &str { c.argument() }
    /// ```
    pub fn argument(&self) -> &str {
        &self.argument
    }

    /// What the user has typed so far (possibly empty).
    ///
    /// ```
    /// fn typed(c: &ferrymcp_core::completion::Completion) -> &str { c.value() }
    /// ```
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Another argument's value, when the client already resolved it.
    ///
    /// ```
    /// fn country(c: &ferrymcp_core::completion::Completion) -> Option<&str> { c.other("country") }
    /// ```
    pub fn other(&self, name: &str) -> Option<&str> {
        self.arguments.get(name).map(String::as_str)
    }

    /// Every argument the client already resolved, by name.
    ///
    /// ```
    /// fn count(c: &ferrymcp_core::completion::Completion) -> usize { c.arguments().len() }
    /// ```
    pub fn arguments(&self) -> &HashMap<String, String> {
        &self.arguments
    }

    /// The request's context: the server, the caller, the session.
    ///
    /// ```
    /// fn server_name(c: &ferrymcp_core::completion::Completion) -> &str { c.context().server().name() }
    /// ```
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// The `candidates` that start with what was typed, ignoring ASCII case, in their
    /// order.
    ///
    /// ```
    /// # let c = ferrymcp_core::completion::Completion::for_test("city", "P");
    /// assert_eq!(c.matching(["paris", "rome", "porto"]), ["paris", "porto"]);
    /// ```
    pub fn matching<I, S>(&self, candidates: I) -> Vec<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let typed = self.value.to_ascii_lowercase();
        candidates
            .into_iter()
            .filter(|c| c.as_ref().to_ascii_lowercase().starts_with(&typed))
            .map(|c| c.as_ref().to_owned())
            .collect()
    }

    /// A completion request for `argument` with `value` typed, on a server of its own (for
    /// testing completers directly).
    ///
    /// ```
    /// let c = ferrymcp_core::completion::Completion::for_test("city", "pa");
    /// assert_eq!(c.value(), "pa");
    /// ```
    pub fn for_test(argument: impl Into<String>, value: impl Into<String>) -> Self {
        Self::new(
            argument.into(),
            value.into(),
            HashMap::new(),
            Context::new(crate::Server::new("test"), crate::RequestScope::new()),
        )
    }
}

/// Suggestions with how many there are in all and whether more exist than were sent.
///
/// ```
/// let s = ferrymcp_core::completion::Suggestions::new(["paris", "park"]).total(150).has_more(true);
/// # let _ = s;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Suggestions {
    values: Vec<String>,
    total: Option<u32>,
    has_more: Option<bool>,
}

impl Suggestions {
    /// These `values`, best first.
    ///
    /// ```
    /// let _ = ferrymcp_core::completion::Suggestions::new(vec!["a".to_owned()]);
    /// ```
    pub fn new<I, S>(values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            values: values.into_iter().map(Into::into).collect(),
            total: None,
            has_more: None,
        }
    }

    /// How many suggestions there are in all (more than were sent, perhaps).
    ///
    /// ```
    /// let _ = ferrymcp_core::completion::Suggestions::new(["a"]).total(10);
    /// ```
    pub fn total(mut self, total: u32) -> Self {
        self.total = Some(total);
        self
    }

    /// Whether there are more suggestions than were sent.
    ///
    /// ```
    /// let _ = ferrymcp_core::completion::Suggestions::new(["a"]).has_more(true);
    /// ```
    pub fn has_more(mut self, more: bool) -> Self {
        self.has_more = Some(more);
        self
    }

    /// The wire form: at most [`MAX_SUGGESTIONS`] values; a longer list is cut and marked
    /// `hasMore`, with its length as the total unless one was given.
    pub(crate) fn into_info(self) -> CompletionInfo {
        let Self {
            mut values,
            total,
            mut has_more,
        } = self;
        let mut total = total;
        if values.len() > MAX_SUGGESTIONS {
            total = total.or(u32::try_from(values.len()).ok());
            values.truncate(MAX_SUGGESTIONS);
            has_more = Some(true);
        }
        let mut info = CompletionInfo::default();
        info.values = values;
        info.total = total;
        info.has_more = has_more;
        info
    }
}

/// What a completer may return.
///
/// ```
/// fn accepts<T: ferrymcp_core::completion::IntoSuggestions>(_: T) {}
/// accepts(vec!["a", "b"]);
/// accepts(Ok::<_, ferrymcp_core::ToolError>(vec!["a".to_owned()]));
/// ```
pub trait IntoSuggestions: Send + 'static {
    /// The suggestions, or why there are none.
    fn into_suggestions(self) -> Result<Suggestions, ToolError>;
}

impl IntoSuggestions for Suggestions {
    fn into_suggestions(self) -> Result<Suggestions, ToolError> {
        Ok(self)
    }
}

/// Another server's answer as it came (a proxied upstream's).
impl IntoSuggestions for CompletionInfo {
    fn into_suggestions(self) -> Result<Suggestions, ToolError> {
        Ok(Suggestions {
            values: self.values,
            total: self.total,
            has_more: self.has_more,
        })
    }
}

impl IntoSuggestions for Vec<String> {
    fn into_suggestions(self) -> Result<Suggestions, ToolError> {
        Ok(Suggestions::new(self))
    }
}

impl IntoSuggestions for Vec<&'static str> {
    fn into_suggestions(self) -> Result<Suggestions, ToolError> {
        Ok(Suggestions::new(self))
    }
}

impl<T: IntoSuggestions, E: Into<ToolError> + Send + 'static> IntoSuggestions for Result<T, E> {
    fn into_suggestions(self) -> Result<Suggestions, ToolError> {
        self.map_err(Into::into)?.into_suggestions()
    }
}

type CompleteFn =
    dyn Fn(Completion) -> BoxFuture<'static, Result<Suggestions, ToolError>> + Send + Sync;

/// One argument's completer, type-erased.
#[derive(Clone)]
pub(crate) struct Completer(Arc<CompleteFn>);

impl Completer {
    pub(crate) fn new<F, Fut, R>(f: F) -> Self
    where
        F: Fn(Completion) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoSuggestions,
    {
        Self(Arc::new(move |completion| {
            let future = f(completion);
            Box::pin(async move { future.await.into_suggestions() })
        }))
    }

    pub(crate) fn run(
        &self,
        completion: Completion,
    ) -> BoxFuture<'static, Result<Suggestions, ToolError>> {
        (self.0)(completion)
    }
}

impl std::fmt::Debug for Completer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Completer")
    }
}

/// The completers of one prompt or template, by argument name.
pub(crate) type Completers = std::collections::BTreeMap<String, Completer>;
