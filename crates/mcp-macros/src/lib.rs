//! `#[tool]`, `#[resource]` and `#[prompt]`: plain `async fn`s become ferrymcp tools,
//! resources and prompts.
//!
//! The function's parameters are the arguments (their types give the input schema and are
//! deserialized for each call), except extractors such as `Context`, `State<T>` or
//! `Principal`, which are extracted as usual. Its doc comment is the description. The
//! attribute turns the function into a value of the same name that registers with
//! `add_tool`, `add_resource` or `add_prompt`; the function itself stays callable as
//! `name::call(..)`.
//!
//! ```
//! use ferrymcp_core::Server;
//! use ferrymcp_macros::tool;
//!
//! /// Multiplies two numbers.
//! #[tool]
//! async fn multiply(a: i64, b: i64) -> i64 { a * b }
//!
//! let server = Server::new("demo");
//! server.add_tool(multiply).unwrap();
//! # let _ = multiply::call(2, 3);
//! ```
//!
//! The macros generate only what the builder API (`ToolDef`, `ResourceDef`, `PromptDef`)
//! does by hand; everything they do can be written without them.

use proc_macro::TokenStream;

mod attrs;
mod crate_path;
mod expand;
mod params;

/// Makes an `async fn` a tool.
///
/// Attributes, all optional: `name = "..."` (default: the function's name), `title`,
/// `description` (default: the doc comment), `tags = ["a", "b"]`, `version = 2` or
/// `"1.2"`, `requires = ["scope"]` (the caller's scopes), `task` or `task = "optional"` /
/// `"required"` / `"forbidden"`, `timeout_secs = 30`, `data = <expression>` (a typed value
/// for an extension or a middleware, as `ToolDef::data`; repeatable, one per type), and the
/// hints `read_only`, `destructive`, `idempotent`, `open_world` (bare, or `= false`).
///
/// On a parameter: a doc comment (its description), `#[arg(description = "...", rename =
/// "...", default)]`, or `#[extract]`
/// for an extractor of your own (the built-in ones are recognized by the name of their type;
/// `#[arg]` makes a parameter an argument whatever its type is called).
///
/// ```
/// use ferrymcp_core::{Context, Server};
/// use ferrymcp_macros::tool;
///
/// /// Reads a file.
/// #[tool(title = "Read a file", read_only, tags = ["files"], requires = ["files:read"])]
/// async fn read_file(
///     cx: Context,
///     #[arg(description = "Path relative to the root")] path: String,
///     limit: Option<u32>,
/// ) -> String {
///     format!("{} read {path} ({limit:?})", cx.server().name())
/// }
///
/// Server::new("files").add_tool(read_file).unwrap();
/// ```
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(expand::Kind::Tool, attr.into(), item.into()).into()
}

/// Makes an `async fn` a resource, or a resource template when its URI has `{variables}`
/// (each one a parameter of the function).
///
/// Attributes: the URI first (`#[resource("users://{id}/profile")]`, or `uri = "..."`),
/// then optionally `name` (default: the function's name), `title`, `description` (default:
/// the doc comment), `mime_type`, `tags`, `version`, `requires`.
///
/// ```
/// use ferrymcp_core::{Json, Server};
/// use ferrymcp_macros::resource;
///
/// /// A user's profile.
/// #[resource("users://{id}/profile", mime_type = "application/json")]
/// async fn profile(id: u32) -> Json<serde_json::Value> {
///     Json(serde_json::json!({ "id": id }))
/// }
///
/// Server::new("users").add_resource(profile).unwrap();
/// ```
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(expand::Kind::Resource, attr.into(), item.into()).into()
}

/// Makes an `async fn` a prompt; its parameters are the prompt's arguments.
///
/// Attributes, all optional: `name` (default: the function's name), `title`,
/// `description` (default: the doc comment), `tags`, `version`, `requires`.
///
/// ```
/// use ferrymcp_core::Server;
/// use ferrymcp_macros::prompt;
///
/// /// Greets someone.
/// #[prompt]
/// async fn greet(name: String, style: Option<String>) -> String {
///     format!("Say hello to {name} in a {} way", style.as_deref().unwrap_or("friendly"))
/// }
///
/// Server::new("prompts").add_prompt(greet).unwrap();
/// ```
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(expand::Kind::Prompt, attr.into(), item.into()).into()
}
