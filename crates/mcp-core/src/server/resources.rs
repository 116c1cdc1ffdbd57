//! Registering, resolving and reading resources and resource templates.
//!
//! A URI resolves at one server like a tool name: this server's own resources first, then
//! its templates, then each mount (with the namespace stripped from the URI); the highest
//! version wins and ties go to the earliest provider. A read of a mounted
//! resource runs the child's own middleware with the child's URI.

use std::{collections::BTreeSet, sync::Arc};

use ferrymcp_types::{ErrorData, JsonObject, ReadResourceResponse, ResourceContents};
use serde_json::Value;

use super::{Route, Server};
use crate::{
    Context, Message, ReadResource, Reply, RequestScope, ResourceDef, ResourceInfo, ServerError,
    TemplateInfo,
    registry::Registered,
    resource::{RegisteredResource, RegisteredTemplate},
    server::ListKind,
    uri_template::UriTemplate,
    version::{Version, VersionSpec},
};

/// What a URI resolved to.
pub(crate) enum ResourceHit {
    Resource(Arc<RegisteredResource>),
    /// A template and the variables it bound.
    Template(Arc<RegisteredTemplate>, JsonObject),
}

impl ResourceHit {
    fn version(&self) -> Option<&Version> {
        match self {
            ResourceHit::Resource(r) => r.version(),
            ResourceHit::Template(t, _) => t.version(),
        }
    }

    pub(crate) fn requirement(&self) -> &crate::auth::Requirement {
        match self {
            ResourceHit::Resource(r) => &r.core.requirement,
            ResourceHit::Template(t, _) => &t.core.requirement,
        }
    }
}

pub(crate) struct ResolvedRead {
    pub(crate) hit: ResourceHit,
    route: Route,
    /// The mounts with a requirement on the way to it.
    pub(crate) gates: super::access::Gates,
}

/// An in-process `resources/read`, with every option.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_core::{ResourceDef, ResourceRead, Server};
/// let s = Server::new("s");
/// s.add_resource(ResourceDef::new("data://v", || async { "one" }).version("1.0")).unwrap();
/// s.add_resource(ResourceDef::new("data://v", || async { "two" }).version("2.0")).unwrap();
/// let read = s.read(ResourceRead::new("data://v").version("1.0").without_middleware()).await;
/// assert!(read.is_ok());
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct ResourceRead {
    uri: String,
    version: Option<Result<VersionSpec, String>>,
    scope: RequestScope,
    run_middleware: bool,
}

impl ResourceRead {
    /// A read of `uri`.
    ///
    /// ```
    /// let _ = ferrymcp_core::ResourceRead::new("data://readme");
    /// ```
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            version: None,
            scope: RequestScope::new(),
            run_middleware: true,
        }
    }
}

crate::builders::request_builders!(
    ResourceRead,
    "ferrymcp_core::ResourceRead::new(\"data://x\")"
);

/// `-32002` (rmcp sends `-32602` to 2026-07-28 clients) with the URI in `data.uri`, as
/// SEP-2164 asks.
pub(crate) fn unknown_resource(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(
        format!("Unknown resource: '{uri}'"),
        Some(serde_json::json!({ "uri": uri })),
    )
}

impl Server {
    /// Registers a resource, or a resource template when the URI has `{variables}`.
    ///
    /// Fails on an invalid version or template, when the template's required arguments are
    /// not all variables of the URI, or on the versioning rules of [`add_tool`](Self::add_tool)
    ///.
    ///
    /// ```
    /// use ferrymcp_core::{Args, ResourceDef, Server, ServerError};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Id { id: u32 }
    /// let s = Server::new("s");
    /// s.add_resource(ResourceDef::new("data://{id}", |Args(i): Args<Id>| async move { i.id.to_string() })).unwrap();
    /// // `name` is required by the handler but is not in the URI:
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Named { name: String }
    /// let bad = s.add_resource(ResourceDef::new("data://x/{id}", |Args(n): Args<Named>| async move { n.name }));
    /// assert!(matches!(bad, Err(ServerError::TemplateArguments { .. })));
    /// ```
    pub fn add_resource(&self, def: impl Into<ResourceDef>) -> Result<(), ServerError> {
        let def = def.into();
        let version = self.parse_version("resource", &def.uri, def.version.as_deref())?;
        let guarded = !def.requirement.is_none();
        if !def.uri.contains('{') {
            let resource = Arc::new(RegisteredResource::new(def, version));
            self.update(&self.inner.resources, |r| r.insert(resource, self.name()))?;
            if guarded {
                self.mark_guarded();
            }
            self.announce(ListKind::Resources);
            return Ok(());
        }
        let template =
            UriTemplate::parse(&def.uri).map_err(|source| ServerError::InvalidTemplate {
                uri: def.uri.clone(),
                source,
            })?;
        let variables: BTreeSet<&str> = template.variables().into_iter().collect();
        let missing: Vec<String> = def
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|name| !variables.contains(name))
            .map(str::to_owned)
            .collect();
        if !missing.is_empty() {
            return Err(ServerError::TemplateArguments {
                uri: def.uri,
                missing,
            });
        }
        let registered = Arc::new(RegisteredTemplate::new(def, template, version));
        self.update(&self.inner.templates, |t| t.insert(registered, self.name()))?;
        if guarded {
            self.mark_guarded();
        }
        self.announce(ListKind::Resources);
        Ok(())
    }

    /// Registers `handler` as the resource (or template) at `uri`; shorthand for
    /// `add_resource(ResourceDef::new(uri, handler))`.
    ///
    /// ```
    /// ferrymcp_core::Server::new("s").resource("data://readme", || async { "hello" }).unwrap();
    /// ```
    pub fn resource<H, M, R>(
        &self,
        uri: impl Into<String>,
        handler: H,
    ) -> Result<&Self, ServerError>
    where
        H: crate::HandlerFn<M, R>,
        R: crate::IntoResourceContents,
        M: 'static,
    {
        self.add_resource(ResourceDef::new(uri, handler))?;
        Ok(self)
    }

    /// Removes every version of the resource or template registered at `uri`; whether there
    /// was one. Mounted parents stop showing it at once.
    ///
    /// ```
    /// let s = ferrymcp_core::Server::new("s");
    /// s.resource("data://readme", || async { "hello" }).unwrap();
    /// assert!(s.remove_resource("data://readme"));
    /// assert!(!s.remove_resource("data://readme"));
    /// ```
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.remove_from(&self.inner.resources, uri, ListKind::Resources)
            | self.remove_from(&self.inner.templates, uri, ListKind::Resources)
    }

    /// Every visible resource, all versions, through middleware.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// s.resource("data://readme", || async { "hello" }).unwrap();
    /// assert_eq!(s.list_resources().await.unwrap()[0].uri(), "data://readme");
    /// # });
    /// ```
    pub async fn list_resources(&self) -> Result<Vec<ResourceInfo>, ErrorData> {
        self.list_resources_in(RequestScope::new()).await
    }

    /// [`list_resources`](Self::list_resources) within a request scope (a caller's
    /// principal, say).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// s.add_resource(ferrymcp_core::ResourceDef::new("data://secret", || async { "x" }).requires(["admin"])).unwrap();
    /// assert!(s.list_resources_in(ferrymcp_core::RequestScope::new()).await.unwrap().is_empty());
    /// # });
    /// ```
    pub async fn list_resources_in(
        &self,
        scope: RequestScope,
    ) -> Result<Vec<ResourceInfo>, ErrorData> {
        self.list_of(Context::new(self.clone(), scope), true).await
    }

    /// Every visible resource template, all versions, through middleware.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// assert!(s.list_resource_templates().await.unwrap().is_empty());
    /// # });
    /// ```
    pub async fn list_resource_templates(&self) -> Result<Vec<TemplateInfo>, ErrorData> {
        self.list_resource_templates_in(RequestScope::new()).await
    }

    /// [`list_resource_templates`](Self::list_resource_templates) within a request scope.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// let listed = s.list_resource_templates_in(ferrymcp_core::RequestScope::new()).await.unwrap();
    /// assert!(listed.is_empty());
    /// # });
    /// ```
    pub async fn list_resource_templates_in(
        &self,
        scope: RequestScope,
    ) -> Result<Vec<TemplateInfo>, ErrorData> {
        self.list_of(Context::new(self.clone(), scope), true).await
    }

    /// Reads `uri` in process, through middleware, like a client would. An unknown URI is
    /// `-32002` (sent as `-32602` to 2026-07-28 clients).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// let error = s.read_resource("data://nothing").await.unwrap_err();
    /// assert_eq!(error.code.0, -32002);
    /// assert_eq!(error.message, "Unknown resource: 'data://nothing'");
    /// # });
    /// ```
    pub async fn read_resource(
        &self,
        uri: impl Into<String>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.read(ResourceRead::new(uri)).await
    }

    /// Reads a resource with every option (version, scope, no middleware).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let s = ferrymcp_core::Server::new("s");
    /// s.resource("data://readme", || async { "hello" }).unwrap();
    /// assert!(s.read(ferrymcp_core::ResourceRead::new("data://readme")).await.is_ok());
    /// # });
    /// ```
    pub async fn read(&self, read: ResourceRead) -> Result<ReadResourceResponse, ErrorData> {
        let version = read
            .version
            .transpose()
            .map_err(|e| ErrorData::invalid_params(e, None))?;
        let cx = Context::new(self.clone(), read.scope);
        let scope = cx.scope_arc();
        let message = ReadResource {
            uri: read.uri,
            version,
            cx,
            run_middleware: read.run_middleware,
            looked_again: false,
        };
        let reply = self.dispatch_read(message).await;
        scope.finish(reply.is_ok());
        reply
    }

    /// Runs a read through this server's middleware (unless skipped) and resolves it.
    pub(crate) async fn dispatch_read(
        &self,
        mut read: ReadResource,
    ) -> Result<ReadResourceResponse, ErrorData> {
        // Before the middleware, which may look the resource up too.
        self.find_unknown_resource(&mut read).await;
        if !read.run_middleware {
            return self.read_resolved(read).await;
        }
        let run_middleware = read.run_middleware;
        self.dispatch_typed(
            Message::ReadResource(read),
            run_middleware,
            |reply| match reply {
                Reply::ReadResource(read) => Some(read),
                _ => None,
            },
        )
        .await
    }

    /// Lets the mirroring servers look again for a resource nothing has (once a request).
    async fn find_unknown_resource(&self, read: &mut ReadResource) {
        let missing = || {
            self.resolve_resource(&read.uri, read.version.as_ref(), &|_, _| true)
                .is_none()
        };
        self.look_again_once(
            &read.cx,
            ListKind::Resources,
            &read.uri,
            &mut read.looked_again,
            missing,
        )
        .await;
    }

    /// Resolves the URI and reads it here, or delegates to the mounted child that has it,
    /// with the exact version resolved.
    pub(crate) async fn read_resolved(
        &self,
        read: ReadResource,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let mut read = read;
        // Unless it was looked for before the middleware (which may have renamed it).
        self.find_unknown_resource(&mut read).await;
        let ReadResource {
            uri,
            version,
            cx,
            run_middleware,
            ..
        } = read;
        let resolved = self.resolve_resource(&uri, version.as_ref(), &|_, _| true);
        let Some(ResolvedRead { hit, route, gates }) = resolved else {
            return Err(unknown_resource(&uri));
        };
        Self::check_access(&cx, &gates, hit.requirement(), "resource", &uri, || {
            unknown_resource(&uri)
        })?;
        match route {
            Route::Local => {
                let (core, params) = match &hit {
                    ResourceHit::Resource(r) => (&r.core, JsonObject::new()),
                    ResourceHit::Template(t, params) => (&t.core, params.clone()),
                };
                let future = super::guarded(|| core.read(cx, &uri, params));
                match future.await.map_err(crate::ToolError::into_input_round) {
                    Ok(response) => Ok(response),
                    // `Context::elicit` asked for input.
                    Err(Ok(input)) => Ok(ReadResourceResponse::InputRequired(input.into())),
                    Err(Err(e)) => {
                        Err(e.into_request_error("resource", &uri, self.masks_error_details()))
                    }
                }
            }
            Route::Mount { child, child_name } => {
                let read = ReadResource {
                    uri: child_name.clone(),
                    version: hit.version().cloned().map(VersionSpec::exact),
                    cx: cx.for_server(&child),
                    run_middleware,
                    looked_again: false,
                };
                let answer = Box::pin(child.dispatch_read(read)).await;
                answer
                    .map(|response| exposed(response, &child_name, &uri))
                    .map_err(|error| {
                        let kinds = ["resource", "resource template"];
                        crate::tool::renamed(error, &kinds, &child_name, &uri)
                    })
            }
        }
    }

    /// Resolves `uri` at this server, skipping components an enclosing server hides
    /// (`visible(uri at that level, tags)`).
    pub(crate) fn resolve_resource(
        &self,
        uri: &str,
        spec: Option<&VersionSpec>,
        visible: &dyn Fn(&str, &BTreeSet<String>) -> bool,
    ) -> Option<ResolvedRead> {
        let visibility = self.inner.visibility.load();
        let shown = |tags: &BTreeSet<String>| visibility.allows(uri, tags) && visible(uri, tags);
        let accepts = |version: Option<&Version>| spec.is_none_or(|s| s.matches(version));
        let mut best = self
            .inner
            .resources
            .load()
            .versions(uri)
            .iter()
            .find(|r| accepts(r.version()) && shown(r.tags()))
            .map(|r| ResourceHit::Resource(Arc::clone(r)));
        if best.is_none() {
            best = self.match_template(uri, &accepts, &shown);
        }
        let mut best = best.map(|hit| ResolvedRead {
            hit,
            route: Route::Local,
            gates: Vec::new(),
        });
        let visible_here =
            |at: &str, tags: &BTreeSet<String>| visibility.allows(at, tags) && visible(at, tags);
        for mount in self.inner.mounts.load().iter() {
            let Some(child_uri) = mount.child_uri(uri) else {
                continue;
            };
            let outer =
                |at: &str, tags: &BTreeSet<String>| visible_here(&mount.exposed_uri(at), tags);
            let Some(found) = mount.child.resolve_resource(&child_uri, spec, &outer) else {
                continue;
            };
            if best
                .as_ref()
                .is_none_or(|b| found.hit.version() > b.hit.version())
            {
                best = Some(ResolvedRead {
                    hit: found.hit,
                    route: Route::Mount {
                        child: mount.child.clone(),
                        child_name: child_uri,
                    },
                    gates: super::access::through(mount, found.gates),
                });
            }
        }
        best
    }

    /// The first template, in registration order, that matches `uri` (its highest accepted
    /// version).
    fn match_template(
        &self,
        uri: &str,
        accepts: &dyn Fn(Option<&Version>) -> bool,
        shown: &dyn Fn(&BTreeSet<String>) -> bool,
    ) -> Option<ResourceHit> {
        let templates = self.inner.templates.load();
        let mut tried = BTreeSet::new();
        for registered in templates.iter() {
            if !tried.insert(Arc::clone(registered.key())) {
                continue;
            }
            let Some(params) = registered.template.matches(uri) else {
                continue;
            };
            let chosen = templates
                .versions(registered.key())
                .iter()
                .find(|t| accepts(t.version()) && shown(t.tags()));
            if let Some(chosen) = chosen {
                let params = params
                    .into_iter()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                return Some(ResourceHit::Template(Arc::clone(chosen), params));
            }
        }
        None
    }
}

/// A mounted child's answer as the client asked for it: contents the child labelled with
/// the URI it was asked for (its own, without the namespace) carry the URI the client read.
fn exposed(mut response: ReadResourceResponse, child_uri: &str, uri: &str) -> ReadResourceResponse {
    if let ReadResourceResponse::Complete(result) = &mut response {
        for contents in &mut result.contents {
            if let ResourceContents::TextResourceContents { uri: labelled, .. }
            | ResourceContents::BlobResourceContents { uri: labelled, .. } = contents
                && labelled == child_uri
            {
                uri.clone_into(labelled);
            }
        }
    }
    response
}
