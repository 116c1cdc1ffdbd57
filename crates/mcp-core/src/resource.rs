//! Resources and resource templates: [`ResourceDef`], what a read returns
//! ([`IntoResourceContents`]) and the handles servers hand out ([`ResourceInfo`],
//! [`TemplateInfo`]).
//!
//! A resource is an async function registered under a URI. When the URI contains
//! RFC 6570 variables (`users://{id}/profile`, `resource://greet{?name}`) it is a template:
//! a read of a matching URI binds the variables and the handler receives them through
//! [`Args<T>`](crate::Args), converted to `T`'s field types (`"123"` becomes `123` for a
//! `u32`).
//!
//! ```
//! use ferrymcp_core::{Args, ResourceDef, Server};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct User { id: u32 }
//!
//! let server = Server::new("data");
//! server.add_resource(ResourceDef::new("config://app", || async { "debug=false" })).unwrap();
//! server.add_resource(
//!     ResourceDef::new("users://{id}/profile", |Args(u): Args<User>| async move {
//!         format!("user {}", u.id)
//!     })
//!     .name("user_profile"),
//! ).unwrap();
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let read = server.read_resource("users://7/profile").await.unwrap();
//! # let ferrymcp_core::types::ReadResourceResponse::Complete(read) = read else { unreachable!() };
//! # let ferrymcp_core::types::ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else { unreachable!() };
//! assert_eq!(text, "user 7");
//! # });
//! ```
//!
//! Mounted under a namespace, the namespace becomes the first path segment after `scheme://`
//! (`data://users` under `data` is `data://data/users`); resource names are
//! not prefixed. See [`uri_template`](crate::uri_template) for the exact rule.

use std::{collections::BTreeSet, sync::Arc};

use base64::Engine as _;
use ferrymcp_types::{
    Annotations, Icon, InputRequiredResult, JsonObject, MetaObject, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};
use serde::Serialize;

use crate::auth::Requirement;
use crate::{
    BoxFuture, Bytes, Context, HandlerFn, Json, Outcome, Server, ToolError,
    completion::{Completer, Completers, Completion, IntoSuggestions},
    extract::CallParts,
    registry::Registered,
    uri_template::UriTemplate,
    version::Version,
};

/// What a resource function may return: text (`String`, `&'static str`), JSON ([`Json`]),
/// binary ([`Bytes`]), ready [`ResourceContents`] (one or many), a whole
/// [`ReadResourceResult`], an [`Outcome`] that may ask for input, or a `Result` of any of
/// these.
///
/// ```
/// use ferrymcp_core::{IntoResourceContents, Json};
/// let read = Json(serde_json::json!({"debug": false}))
///     .into_read_response("config://app", None)
///     .unwrap();
/// # let ferrymcp_core::types::ReadResourceResponse::Complete(read) = read else { unreachable!() };
/// # let ferrymcp_core::types::ResourceContents::TextResourceContents { mime_type, .. } = &read.contents[0] else { unreachable!() };
/// assert_eq!(mime_type.as_deref(), Some("application/json"));
/// ```
#[diagnostic::on_unimplemented(
    message = "a resource cannot return `{Self}`",
    label = "not resource contents",
    note = "a resource returns `String`, `&'static str`, `Bytes`, `Json<T>`, `ResourceContents`, `Vec<ResourceContents>`, or a `Result` of one"
)]
pub trait IntoResourceContents: Send + 'static {
    /// The read result for `uri`; `mime_type` is the resource's declared type, if any.
    fn into_read_response(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<ReadResourceResponse, ToolError>;
}

fn complete(contents: Vec<ResourceContents>) -> Result<ReadResourceResponse, ToolError> {
    Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
        contents,
    )))
}

fn text_contents(
    text: String,
    uri: &str,
    mime_type: Option<&str>,
    default: &str,
) -> ResourceContents {
    ResourceContents::TextResourceContents {
        uri: uri.to_owned(),
        mime_type: Some(mime_type.unwrap_or(default).to_owned()),
        text,
        meta: None,
    }
}

impl IntoResourceContents for String {
    fn into_read_response(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<ReadResourceResponse, ToolError> {
        complete(vec![text_contents(self, uri, mime_type, "text/plain")])
    }
}

impl IntoResourceContents for &'static str {
    fn into_read_response(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<ReadResourceResponse, ToolError> {
        self.to_owned().into_read_response(uri, mime_type)
    }
}

impl<T: Serialize + Send + 'static> IntoResourceContents for Json<T> {
    fn into_read_response(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<ReadResourceResponse, ToolError> {
        let text = serde_json::to_string(&self.0).map_err(ToolError::internal)?;
        complete(vec![text_contents(
            text,
            uri,
            mime_type,
            "application/json",
        )])
    }
}

impl IntoResourceContents for Bytes {
    fn into_read_response(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<ReadResourceResponse, ToolError> {
        complete(vec![ResourceContents::BlobResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(mime_type.unwrap_or("application/octet-stream").to_owned()),
            blob: base64::engine::general_purpose::STANDARD.encode(self.0),
            meta: None,
        }])
    }
}

impl IntoResourceContents for ResourceContents {
    fn into_read_response(
        self,
        _uri: &str,
        _mime_type: Option<&str>,
    ) -> Result<ReadResourceResponse, ToolError> {
        complete(vec![self])
    }
}

impl IntoResourceContents for Vec<ResourceContents> {
    fn into_read_response(
        self,
        _uri: &str,
        _mime_type: Option<&str>,
    ) -> Result<ReadResourceResponse, ToolError> {
        complete(self)
    }
}

impl IntoResourceContents for ReadResourceResult {
    fn into_read_response(
        self,
        _uri: &str,
        _mime_type: Option<&str>,
    ) -> Result<ReadResourceResponse, ToolError> {
        Ok(ReadResourceResponse::Complete(self))
    }
}

impl IntoResourceContents for ReadResourceResponse {
    fn into_read_response(
        self,
        _uri: &str,
        _mime_type: Option<&str>,
    ) -> Result<ReadResourceResponse, ToolError> {
        Ok(self)
    }
}

impl<T: IntoResourceContents> IntoResourceContents for Outcome<T> {
    fn into_read_response(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<ReadResourceResponse, ToolError> {
        match self {
            Outcome::Done(value) => value.into_read_response(uri, mime_type),
            Outcome::InputRequired(input) => Ok(ReadResourceResponse::InputRequired(
                InputRequiredResult::from(input),
            )),
        }
    }
}

impl<T: IntoResourceContents, E: Into<ToolError> + Send + 'static> IntoResourceContents
    for Result<T, E>
{
    fn into_read_response(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<ReadResourceResponse, ToolError> {
        self.map_err(Into::into)?.into_read_response(uri, mime_type)
    }
}

/// The erased read function: context, the bound variables as arguments, the declared MIME
/// type.
type ReadFn = dyn Fn(
        Context,
        CallParts,
        Option<Arc<str>>,
    ) -> BoxFuture<'static, Result<ReadResourceResponse, ToolError>>
    + Send
    + Sync;

/// A resource or resource template to register: a URI, a handler and metadata.
///
/// ```
/// use ferrymcp_core::{ResourceDef, types::Annotations};
/// let def = ResourceDef::new("config://app", || async { "debug=false" })
///     .name("app_config")
///     .title("App config")
///     .description("The running configuration")
///     .mime_type("text/plain")
///     .tag("config")
///     .version("1.0");
/// assert_eq!(def.uri(), "config://app");
/// ```
pub struct ResourceDef {
    pub(crate) uri: String,
    pub(crate) name: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: Option<String>,
    pub(crate) size: Option<u64>,
    pub(crate) annotations: Option<Annotations>,
    pub(crate) icons: Option<Vec<Icon>>,
    pub(crate) meta: Option<MetaObject>,
    pub(crate) tags: BTreeSet<String>,
    pub(crate) version: Option<String>,
    pub(crate) input_schema: JsonObject,
    pub(crate) read: Arc<ReadFn>,
    /// The server state the handler's parameters need.
    pub(crate) needs: Vec<crate::StateNeed>,
    pub(crate) requirement: Requirement,
    pub(crate) completers: Completers,
}

impl ResourceDef {
    /// A resource at `uri` (a template when it contains `{variables}`), read by `handler`.
    /// Its name defaults to the URI.
    ///
    /// ```
    /// let _ = ferrymcp_core::ResourceDef::new("data://readme", || async { "hello" });
    /// ```
    pub fn new<H, M, R>(uri: impl Into<String>, handler: H) -> Self
    where
        H: HandlerFn<M, R>,
        R: IntoResourceContents,
        M: 'static,
    {
        let read = move |cx: Context, parts: CallParts, mime: Option<Arc<str>>| {
            let uri = Arc::clone(&parts.tool);
            let future = handler.clone().call(cx, parts);
            Box::pin(async move { future.await?.into_read_response(&uri, mime.as_deref()) })
                as BoxFuture<'static, _>
        };
        Self {
            uri: uri.into(),
            name: None,
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
            icons: None,
            meta: None,
            tags: BTreeSet::new(),
            version: None,
            input_schema: H::input_schema(),
            read: Arc::new(read),
            needs: H::needs(),
            requirement: Requirement::none(),
            completers: Completers::new(),
        }
    }

    /// Suggests values for the template variable `variable` while a user types it
    /// (`completion/complete`); see [`completion`](crate::completion). Only templates are
    /// completed: a fixed URI has no variables.
    ///
    /// ```
    /// use ferrymcp_core::{ResourceDef, completion::Completion};
    /// let _ = ResourceDef::new("users://{id}/profile", || async { "profile" })
    ///     .complete("id", |c: Completion| async move { c.matching(["ada", "alan"]) });
    /// ```
    pub fn complete<F, Fut, R>(mut self, variable: impl Into<String>, completer: F) -> Self
    where
        F: Fn(Completion) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = R> + Send + 'static,
        R: IntoSuggestions,
    {
        self.completers
            .insert(variable.into(), Completer::new(completer));
        self
    }

    /// The URI or URI template.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::ResourceDef::new("a://b", || async { "" }).uri(), "a://b");
    /// ```
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The name clients see (the URI when unset).
    ///
    /// ```
    /// let _ = ferrymcp_core::ResourceDef::new("a://b", || async { "" }).name("b");
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The MIME type of the contents (text defaults to `text/plain`, [`Json`] to
    /// `application/json`, [`Bytes`] to `application/octet-stream`).
    ///
    /// ```
    /// let _ = ferrymcp_core::ResourceDef::new("a://b", || async { "" }).mime_type("text/markdown");
    /// ```
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The size in bytes, when known up front.
    ///
    /// ```
    /// let _ = ferrymcp_core::ResourceDef::new("a://b", || async { "" }).size(0);
    /// ```
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    /// Annotations (audience, priority, last modified).
    ///
    /// ```
    /// let _ = ferrymcp_core::ResourceDef::new("a://b", || async { "" })
    ///     .annotations(ferrymcp_core::types::Annotations::default());
    /// ```
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

crate::builders::metadata_builders!(
    ResourceDef,
    "ferrymcp_core::ResourceDef::new(\"data://x\", || async { \"x\" })"
);

impl std::fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceDef")
            .field("uri", &self.uri)
            .field("name", &self.name)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// What registration keeps of a resource or template, shared by both.
pub(crate) struct ResourceCore {
    pub(crate) key: Arc<str>,
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: Option<Arc<str>>,
    pub(crate) annotations: Option<Annotations>,
    pub(crate) icons: Option<Vec<Icon>>,
    pub(crate) meta: Option<MetaObject>,
    pub(crate) tags: BTreeSet<String>,
    pub(crate) version: Option<Version>,
    pub(crate) input_schema: Arc<JsonObject>,
    pub(crate) read: Arc<ReadFn>,
    /// The server state the handler's parameters need.
    pub(crate) needs: Vec<crate::StateNeed>,
    pub(crate) requirement: Requirement,
}

impl ResourceCore {
    fn new(def: ResourceDef, version: Option<Version>) -> (Self, Option<u64>) {
        let mut meta = def.meta;
        crate::registry::stamp_version(&mut meta, version.as_ref());
        let core = Self {
            name: def.name.unwrap_or_else(|| def.uri.clone()),
            key: def.uri.into(),
            title: def.title,
            description: def.description,
            mime_type: def.mime_type.map(Arc::from),
            annotations: def.annotations,
            icons: def.icons,
            meta,
            tags: def.tags,
            version,
            input_schema: Arc::new(def.input_schema),
            read: def.read,
            needs: def.needs,
            requirement: def.requirement,
        };
        (core, def.size)
    }

    /// Reads with `params` bound as arguments; `uri` is the URI as the owning server knows
    /// it.
    pub(crate) fn read(
        &self,
        cx: Context,
        uri: &str,
        params: JsonObject,
    ) -> BoxFuture<'static, Result<ReadResourceResponse, ToolError>> {
        let parts = CallParts {
            kind: "resource template",
            tool: uri.into(),
            arguments: params,
            input_schema: Arc::clone(&self.input_schema),
            // URI variables are strings: always convert them to the declared types.
            strict: false,
        };
        (self.read)(cx, parts, self.mime_type.clone())
    }
}

/// A concrete resource as stored in its server's registry.
pub(crate) struct RegisteredResource {
    pub(crate) core: ResourceCore,
    pub(crate) size: Option<u64>,
}

impl RegisteredResource {
    pub(crate) fn new(def: ResourceDef, version: Option<Version>) -> Self {
        let (core, size) = ResourceCore::new(def, version);
        Self { core, size }
    }

    /// The listing entry, under `uri`.
    pub(crate) fn listing(&self, uri: &str) -> Resource {
        let c = &self.core;
        let mut resource = Resource::new(uri, c.name.clone());
        resource.title = c.title.clone();
        resource.description = c.description.clone();
        resource.mime_type = c.mime_type.as_deref().map(str::to_owned);
        resource.size = self.size;
        resource.icons = c.icons.clone();
        resource.meta = c.meta.clone();
        resource.annotations = c.annotations.clone();
        resource
    }
}

/// A resource template as stored in its server's registry.
pub(crate) struct RegisteredTemplate {
    pub(crate) core: ResourceCore,
    pub(crate) template: UriTemplate,
    pub(crate) completers: Completers,
}

impl RegisteredTemplate {
    pub(crate) fn new(
        mut def: ResourceDef,
        template: UriTemplate,
        version: Option<Version>,
    ) -> Self {
        let completers = std::mem::take(&mut def.completers);
        let (core, _) = ResourceCore::new(def, version);
        Self {
            core,
            template,
            completers,
        }
    }

    /// The listing entry, under `uri_template`.
    pub(crate) fn listing(&self, uri_template: &str) -> ResourceTemplate {
        let c = &self.core;
        let mut template = ResourceTemplate::new(uri_template, c.name.clone());
        template.title = c.title.clone();
        template.description = c.description.clone();
        template.mime_type = c.mime_type.as_deref().map(str::to_owned);
        template.icons = c.icons.clone();
        template.meta = c.meta.clone();
        template.annotations = c.annotations.clone();
        template
    }
}

macro_rules! registered {
    ($ty:ty, $kind:literal) => {
        impl Registered for $ty {
            const KIND: &'static str = $kind;
            fn key(&self) -> &Arc<str> {
                &self.core.key
            }
            fn version(&self) -> Option<&Version> {
                self.core.version.as_ref()
            }
            fn tags(&self) -> &BTreeSet<String> {
                &self.core.tags
            }
        }
    };
}

registered!(RegisteredResource, "resource");
registered!(RegisteredTemplate, "resource template");

/// A resource as one server lists it: its URI there and the server that owns it.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_core::{ResourceDef, Server};
/// let child = Server::new("child");
/// child.add_resource(ResourceDef::new("data://users", || async { "[]" })).unwrap();
/// let parent = Server::new("parent");
/// parent.mount(&child, "data").unwrap();
/// let listed = parent.list_resources().await.unwrap();
/// assert_eq!(listed[0].uri(), "data://data/users");
/// assert_eq!(listed[0].owner_uri(), "data://users");
/// # });
/// ```
#[derive(Clone)]
pub struct ResourceInfo {
    pub(crate) uri: Arc<str>,
    pub(crate) resource: Arc<RegisteredResource>,
    pub(crate) owner: Server,
    pub(crate) owner_uri: Arc<str>,
}

/// A resource template as one server lists it: its URI template there and its owner.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_core::{Args, ResourceDef, Server};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Id { id: String }
/// let child = Server::new("child");
/// child.add_resource(ResourceDef::new("users://{id}", |Args(i): Args<Id>| async move { i.id })).unwrap();
/// let parent = Server::new("parent");
/// parent.mount(&child, "api").unwrap();
/// let listed = parent.list_resource_templates().await.unwrap();
/// assert_eq!(listed[0].uri_template(), "users://api/{id}");
/// # });
/// ```
#[derive(Clone)]
pub struct TemplateInfo {
    pub(crate) template: UriTemplate,
    pub(crate) registered: Arc<RegisteredTemplate>,
    pub(crate) owner: Server,
}

macro_rules! listed_common {
    ($ty:ident, $field:ident) => {
        impl $ty {
            /// The name (never namespaced).
            pub fn name(&self) -> &str {
                &self.$field.core.name
            }
            /// The version, if any.
            pub fn version(&self) -> Option<&Version> {
                self.$field.core.version.as_ref()
            }
            /// The tags.
            pub fn tags(&self) -> &BTreeSet<String> {
                &self.$field.core.tags
            }
            /// The directly mounted child that owns it, or this server for its own.
            pub fn owner(&self) -> &Server {
                &self.owner
            }
        }
    };
}

listed_common!(ResourceInfo, resource);
listed_common!(TemplateInfo, registered);

impl ResourceInfo {
    /// The URI at this server (namespaced for mounted resources).
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The URI as the owner knows it.
    pub fn owner_uri(&self) -> &str {
        &self.owner_uri
    }

    /// The listing entry clients see.
    pub fn to_resource(&self) -> Resource {
        self.resource.listing(&self.uri)
    }
}

impl TemplateInfo {
    /// The URI template at this server (namespaced for mounted templates).
    pub fn uri_template(&self) -> &str {
        self.template.as_str()
    }

    /// The listing entry clients see.
    pub fn to_resource_template(&self) -> ResourceTemplate {
        self.registered.listing(self.template.as_str())
    }
}

impl std::fmt::Debug for ResourceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceInfo")
            .field("uri", &self.uri)
            .field("owner", &self.owner.name())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for TemplateInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateInfo")
            .field("uri_template", &self.template.as_str())
            .field("owner", &self.owner.name())
            .finish_non_exhaustive()
    }
}
