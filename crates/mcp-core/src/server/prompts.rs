//! Registering, resolving and rendering prompts. Names resolve like tool names;
//! a mounted prompt renders through the child's own middleware.

use std::{collections::BTreeSet, sync::Arc};

use ferrymcp_types::{ErrorData, GetPromptResponse, JsonObject};
use serde_json::Value;

use super::{Route, Server};
use crate::{
    Context, GetPrompt, Message, PromptDef, PromptInfo, Reply, RequestScope, ServerError,
    prompt::RegisteredPrompt, registry::Registered, server::ListKind, version::VersionSpec,
};

/// An in-process `prompts/get`, with every option.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_core::{PromptGet, Server};
/// let s = Server::new("s");
/// s.prompt("hello", || async { "Say hello" }).unwrap();
/// let rendered = s.render(PromptGet::new("hello").without_middleware()).await;
/// assert!(rendered.is_ok());
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct PromptGet {
    name: String,
    arguments: JsonObject,
    version: Option<Result<VersionSpec, String>>,
    scope: RequestScope,
    run_middleware: bool,
}

impl PromptGet {
    /// Renders the prompt `name`.
    ///
    /// ```
    /// let _ = ferrymcp_core::PromptGet::new("hello");
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            arguments: JsonObject::new(),
            version: None,
            scope: RequestScope::new(),
            run_middleware: true,
        }
    }

    /// Sets one argument.
    ///
    /// ```
    /// let _ = ferrymcp_core::PromptGet::new("greet").argument("name", "Ada");
    /// ```
    pub fn argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.arguments
            .insert(name.into(), Value::String(value.into()));
        self
    }
}

crate::builders::request_builders!(PromptGet, "ferrymcp_core::PromptGet::new(\"p\")");

pub(crate) fn unknown_prompt(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Unknown prompt: '{name}'"), None)
}

impl Server {
    /// Registers a prompt, with the versioning rules of [`add_tool`](Self::add_tool).
    ///
    /// ```
    /// use ferrymcp_core::{PromptDef, Server, ServerError};
    /// let s = Server::new("s");
    /// s.add_prompt(PromptDef::new("p", || async { "one" }).version("1.0")).unwrap();
    /// let mixed = s.add_prompt(PromptDef::new("p", || async { "two" }));
    /// assert!(matches!(mixed, Err(ServerError::MixedVersioning { kind: "prompt", .. })));
    /// ```
    pub fn add_prompt(&self, def: impl Into<PromptDef>) -> Result<(), ServerError> {
        let def = def.into();
        if def.name.is_empty() {
            return Err(ServerError::InvalidName {
                name: def.name,
                reason: "a prompt name cannot be empty",
            });
        }
        let version = self.parse_version("prompt", &def.name, def.version.as_deref())?;
        let prompt = Arc::new(RegisteredPrompt::new(def, version));
        let guarded = !prompt.requirement.is_none();
        self.update(&self.inner.prompts, |p| p.insert(prompt, self.name()))?;
        if guarded {
            self.mark_guarded();
        }
        self.announce(ListKind::Prompts);
        Ok(())
    }

    /// Registers `handler` as the prompt `name`; shorthand for
    /// `add_prompt(PromptDef::new(name, handler))`.
    ///
    /// ```
    /// ferrymcp_core::Server::new("s").prompt("hello", || async { "Say hello" }).unwrap();
    /// ```
    pub fn prompt<H, M, R>(&self, name: impl Into<String>, handler: H) -> Result<&Self, ServerError>
    where
        H: crate::HandlerFn<M, R>,
        R: crate::IntoPromptResult,
        M: 'static,
    {
        self.add_prompt(PromptDef::new(name, handler))?;
        Ok(self)
    }

    /// Removes every version of the prompt `name`; whether there was one.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("s");
    /// s.prompt("hello", || async { "Say hello" }).unwrap();
    /// assert!(s.remove_prompt("hello"));
    /// ```
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.remove_from(&self.inner.prompts, name, ListKind::Prompts)
    }

    /// Every visible prompt, all versions, through middleware.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// s.prompt("hello", || async { "Say hello" }).unwrap();
    /// assert_eq!(s.list_prompts().await.unwrap()[0].name(), "hello");
    /// # });
    /// ```
    pub async fn list_prompts(&self) -> Result<Vec<PromptInfo>, ErrorData> {
        self.list_prompts_in(RequestScope::new()).await
    }

    /// [`list_prompts`](Self::list_prompts) within a request scope (a caller's principal,
    /// say).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// s.add_prompt(ferrymcp_core::PromptDef::new("p", || async { "x" }).requires(["admin"])).unwrap();
    /// assert!(s.list_prompts_in(ferrymcp_core::RequestScope::new()).await.unwrap().is_empty());
    /// # });
    /// ```
    pub async fn list_prompts_in(&self, scope: RequestScope) -> Result<Vec<PromptInfo>, ErrorData> {
        self.list_of(Context::new(self.clone(), scope), true).await
    }

    /// The prompt `name` as this server would render it, without running anything.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("s");
    /// s.prompt("hello", || async { "Say hello" }).unwrap();
    /// assert_eq!(s.get_prompt_info("hello", None).unwrap().owner().name(), "s");
    /// ```
    pub fn get_prompt_info(&self, name: &str, version: Option<&VersionSpec>) -> Option<PromptInfo> {
        let (prompt, route, _) = self.resolve_prompt(name, version, &|_, _| true)?;
        let name: Arc<str> = Arc::from(name);
        Some(match route {
            Route::Local => PromptInfo {
                owner_name: Arc::clone(&name),
                name,
                prompt,
                owner: self.clone(),
            },
            Route::Mount { child, child_name } => PromptInfo {
                name,
                prompt,
                owner: child,
                owner_name: child_name.into(),
            },
        })
    }

    /// Renders the prompt `name` in process, through middleware, with string arguments.
    /// An unknown prompt is `-32602`.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// let error = s.get_prompt("nope", Default::default()).await.unwrap_err();
    /// assert_eq!(error.message, "Unknown prompt: 'nope'");
    /// # });
    /// ```
    pub async fn get_prompt(
        &self,
        name: impl Into<String>,
        arguments: JsonObject,
    ) -> Result<GetPromptResponse, ErrorData> {
        let mut get = PromptGet::new(name);
        get.arguments = arguments;
        self.render(get).await
    }

    /// Renders a prompt with every option.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// s.prompt("hello", || async { "Say hello" }).unwrap();
    /// assert!(s.render(ferrymcp_core::PromptGet::new("hello")).await.is_ok());
    /// # });
    /// ```
    pub async fn render(&self, get: PromptGet) -> Result<GetPromptResponse, ErrorData> {
        let version = get
            .version
            .transpose()
            .map_err(|e| ErrorData::invalid_params(e, None))?;
        let cx = Context::new(self.clone(), get.scope);
        let scope = cx.scope_arc();
        let message = GetPrompt {
            name: get.name,
            arguments: get.arguments,
            version,
            cx,
            run_middleware: get.run_middleware,
            looked_again: false,
        };
        let reply = self.dispatch_get_prompt(message).await;
        scope.finish(reply.is_ok());
        reply
    }

    /// Runs a `prompts/get` through this server's middleware (unless skipped).
    pub(crate) async fn dispatch_get_prompt(
        &self,
        mut get: GetPrompt,
    ) -> Result<GetPromptResponse, ErrorData> {
        // Before the middleware, which may look the prompt up too.
        self.find_unknown_prompt(&mut get).await;
        if !get.run_middleware {
            return self.get_prompt_resolved(get).await;
        }
        self.dispatch_typed(Message::GetPrompt(get), true, |reply| match reply {
            Reply::GetPrompt(rendered) => Some(rendered),
            _ => None,
        })
        .await
    }

    /// Lets the mirroring servers look again for a prompt nothing has (once a request).
    async fn find_unknown_prompt(&self, get: &mut GetPrompt) {
        let missing = || {
            self.resolve_prompt(&get.name, get.version.as_ref(), &|_, _| true)
                .is_none()
        };
        self.look_again_once(
            &get.cx,
            ListKind::Prompts,
            &get.name,
            &mut get.looked_again,
            missing,
        )
        .await;
    }

    /// Resolves the name and renders here, or delegates to the mounted child with the exact
    /// version resolved.
    pub(crate) async fn get_prompt_resolved(
        &self,
        get: GetPrompt,
    ) -> Result<GetPromptResponse, ErrorData> {
        let mut get = get;
        // Unless it was looked for before the middleware (which may have renamed it).
        self.find_unknown_prompt(&mut get).await;
        let GetPrompt {
            name,
            arguments,
            version,
            cx,
            run_middleware,
            ..
        } = get;
        let resolved = self.resolve_prompt(&name, version.as_ref(), &|_, _| true);
        let Some((prompt, route, gates)) = resolved else {
            return Err(unknown_prompt(&name));
        };
        Self::check_access(&cx, &gates, &prompt.requirement, "prompt", &name, || {
            unknown_prompt(&name)
        })?;
        match route {
            Route::Local => match super::guarded(|| prompt.render(cx, arguments))
                .await
                .map_err(crate::ToolError::into_input_round)
            {
                Ok(response) => Ok(response),
                // `Context::elicit` asked for input.
                Err(Ok(input)) => Ok(GetPromptResponse::InputRequired(input.into())),
                Err(Err(e)) => {
                    Err(e.into_request_error("prompt", &name, self.masks_error_details()))
                }
            },
            Route::Mount { child, child_name } => {
                let get = GetPrompt {
                    name: child_name.clone(),
                    arguments,
                    version: prompt.version.clone().map(VersionSpec::exact),
                    cx: cx.for_server(&child),
                    run_middleware,
                    looked_again: false,
                };
                Box::pin(child.dispatch_get_prompt(get))
                    .await
                    .map_err(|error| crate::tool::renamed(error, &["prompt"], &child_name, &name))
            }
        }
    }

    /// Resolves `name` at this server, skipping prompts an enclosing server hides.
    pub(crate) fn resolve_prompt(
        &self,
        name: &str,
        spec: Option<&VersionSpec>,
        visible: &dyn Fn(&str, &BTreeSet<String>) -> bool,
    ) -> Option<(Arc<RegisteredPrompt>, Route, super::access::Gates)> {
        let visibility = self.inner.visibility.load();
        let shown =
            |at: &str, tags: &BTreeSet<String>| visibility.allows(at, tags) && visible(at, tags);
        let mut best = self
            .inner
            .prompts
            .load()
            .versions(name)
            .iter()
            .find(|p| spec.is_none_or(|s| s.matches(p.version())) && shown(name, p.tags()))
            .map(|p| (Arc::clone(p), Route::Local, Vec::new()));
        for mount in self.inner.mounts.load().iter() {
            let Some(child_name) = mount.child_prompt(name) else {
                continue;
            };
            let outer = |at: &str, tags: &BTreeSet<String>| shown(&mount.exposed_prompt(at), tags);
            let Some((found, _, inner)) = mount.child.resolve_prompt(child_name, spec, &outer)
            else {
                continue;
            };
            if best
                .as_ref()
                .is_none_or(|(b, _, _)| found.version() > b.version())
            {
                best = Some((
                    found,
                    Route::Mount {
                        child: mount.child.clone(),
                        child_name: child_name.to_owned(),
                    },
                    super::access::through(mount, inner),
                ));
            }
        }
        best
    }
}
