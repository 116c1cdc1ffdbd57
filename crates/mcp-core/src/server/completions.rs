//! Answering `completion/complete`: the prompt or template named by the request's `ref`
//! resolves like `prompts/get` and `resources/read` do (through mounts, visibility and
//! access checks), and its completer for the argument suggests values.
//!
//! A request goes through the root's middleware as a [`CustomRequest`] with the method
//! `completion/complete`; one that resolves into a mounted child goes on through the child's
//! own middleware, with the child's prompt name or template URI in its `ref`.

use std::{collections::BTreeSet, sync::Arc};

use ferrymcp_types::{CompleteRequestParams, CompleteResult, CompletionInfo, ErrorData, Reference};
use serde_json::Value;

use super::{Route, Server, access::Gates, prompts::unknown_prompt};
use crate::{
    Context, CustomRequest, Message, Reply, RequestScope,
    completion::{Completers, Completion},
    resource::RegisteredTemplate,
};

/// The method name.
pub(crate) const METHOD: &str = "completion/complete";

fn unknown_template(uri: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Unknown resource template: '{uri}'"), None)
}

impl Server {
    /// Suggests values for a prompt argument or a template variable, through this server's
    /// middleware, as a `completion/complete` from a client would.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use ferrymcp_core::{PromptDef, RequestScope, Server, completion::Completion};
    /// use ferrymcp_core::types::{ArgumentInfo, CompleteRequestParams, Reference};
    ///
    /// let s = Server::new("s");
    /// s.add_prompt(PromptDef::new("plan", || async { "Plan" })
    ///     .complete("city", |c: Completion| async move { c.matching(["paris", "rome"]) }))
    ///     .unwrap();
    /// let request = CompleteRequestParams::new(Reference::for_prompt("plan"), ArgumentInfo::new("city", "pa"));
    /// let answer = s.complete(request, RequestScope::new()).await.unwrap();
    /// assert_eq!(answer.completion.values, ["paris"]);
    /// # });
    /// ```
    pub async fn complete(
        &self,
        request: CompleteRequestParams,
        scope: RequestScope,
    ) -> Result<CompleteResult, ErrorData> {
        let params = serde_json::to_value(&request)
            .map_err(|e| ErrorData::invalid_params(format!("a completion request: {e}"), None))?;
        let value = self.request(METHOD, Some(params), scope).await?;
        serde_json::from_value(value).map_err(|e| {
            crate::masked_internal_error(format_args!(
                "completion/complete produced an invalid result: {e}"
            ))
        })
    }

    /// Whether a prompt or template here, or in a server mounted below, has a completer:
    /// then the server advertises `completions`.
    pub(crate) fn has_completers(&self) -> bool {
        self.inner
            .prompts
            .load()
            .iter()
            .any(|p| !p.completers.is_empty())
            || self
                .inner
                .templates
                .load()
                .iter()
                .any(|t| !t.completers.is_empty())
            || self
                .inner
                .mounts
                .load()
                .iter()
                .any(|m| m.child.has_completers())
    }

    /// The end of the middleware chain for `completion/complete`.
    pub(crate) async fn complete_endpoint(
        &self,
        cx: Context,
        params: Option<Value>,
    ) -> Result<Value, ErrorData> {
        let request: CompleteRequestParams = serde_json::from_value(params.unwrap_or(Value::Null))
            .map_err(|e| {
                ErrorData::invalid_params(format!("invalid completion/complete params: {e}"), None)
            })?;
        let (completers, route) = match &request.r#ref {
            Reference::Prompt(prompt) => {
                let name = &prompt.name;
                let (found, route, gates) = self
                    .resolve_prompt(name, None, &|_, _| true)
                    .ok_or_else(|| unknown_prompt(name))?;
                Self::check_access(&cx, &gates, &found.requirement, "prompt", name, || {
                    unknown_prompt(name)
                })?;
                (found.completers.clone(), route)
            }
            Reference::Resource(template) => {
                let uri = &template.uri;
                let (found, route, gates) = self
                    .resolve_template(uri, &|_, _| true)
                    .ok_or_else(|| unknown_template(uri))?;
                Self::check_access(
                    &cx,
                    &gates,
                    &found.core.requirement,
                    "resource",
                    uri,
                    || unknown_template(uri),
                )?;
                (found.completers.clone(), route)
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "cannot complete a reference of type {}",
                        other.reference_type()
                    ),
                    None,
                ));
            }
        };
        match route {
            Route::Local => self.run_completer(&completers, cx, request).await,
            Route::Mount { child, child_name } => {
                let mut request = request;
                request.r#ref = match request.r#ref {
                    Reference::Prompt(_) => Reference::for_prompt(child_name),
                    _ => Reference::for_resource(child_name),
                };
                let params = serde_json::to_value(&request).map_err(|e| {
                    crate::masked_internal_error(format_args!("a completion request: {e}"))
                })?;
                let message = Message::Custom(CustomRequest {
                    method: METHOD.to_owned(),
                    params: Some(params),
                    cx: cx.for_server(&child),
                });
                match Box::pin(child.dispatch(message)).await? {
                    Reply::Custom(value) => Ok(value),
                    _ => Err(crate::masked_internal_error(
                        "a middleware answered completion/complete with a reply of another kind",
                    )),
                }
            }
        }
    }

    /// Runs the completer for the request's argument (no completer: no suggestions).
    async fn run_completer(
        &self,
        completers: &Completers,
        cx: Context,
        request: CompleteRequestParams,
    ) -> Result<Value, ErrorData> {
        let CompleteRequestParams {
            argument, context, ..
        } = request;
        let info = match completers.get(&argument.name) {
            None => CompletionInfo::default(),
            Some(completer) => {
                let arguments = context.and_then(|c| c.arguments).unwrap_or_default();
                let what = argument.name.clone();
                let completion = Completion::new(argument.name, argument.value, arguments, cx);
                super::guarded(|| completer.run(completion))
                    .await
                    .map_err(|e| {
                        e.into_request_error("completion", &what, self.masks_error_details())
                    })?
                    .into_info()
            }
        };
        serde_json::to_value(CompleteResult::new(info))
            .map_err(|e| crate::masked_internal_error(format_args!("a completion result: {e}")))
    }

    /// Resolves a template reference at this server: its URI template as registered (or
    /// exposed by a mount), or a concrete URI one of the templates matches.
    pub(crate) fn resolve_template(
        &self,
        uri: &str,
        visible: &dyn Fn(&str, &BTreeSet<String>) -> bool,
    ) -> Option<(Arc<RegisteredTemplate>, Route, Gates)> {
        let visibility = self.inner.visibility.load();
        let shown =
            |at: &str, tags: &BTreeSet<String>| visibility.allows(at, tags) && visible(at, tags);
        let templates = self.inner.templates.load();
        let local = templates
            .versions(uri)
            .iter()
            .find(|t| shown(uri, &t.core.tags))
            .or_else(|| {
                templates
                    .iter()
                    .filter(|t| t.template.matches(uri).is_some())
                    .find(|t| shown(uri, &t.core.tags))
            });
        if let Some(found) = local {
            return Some((Arc::clone(found), Route::Local, Vec::new()));
        }
        for mount in self.inner.mounts.load().iter() {
            let Some(child_uri) = mount.child_uri(uri) else {
                continue;
            };
            let outer = |at: &str, tags: &BTreeSet<String>| shown(&mount.exposed_uri(at), tags);
            if let Some((found, _, inner)) = mount.child.resolve_template(&child_uri, &outer) {
                return Some((
                    found,
                    Route::Mount {
                        child: mount.child.clone(),
                        child_name: child_uri,
                    },
                    super::access::through(mount, inner),
                ));
            }
        }
        None
    }
}
