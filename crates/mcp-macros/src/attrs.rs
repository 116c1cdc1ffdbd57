//! The attribute arguments: `#[tool(name = "...", read_only, ...)]`, shared by the three
//! macros, each accepting its own subset.

use proc_macro2::Span;
use syn::{Expr, ExprLit, Lit, LitBool, LitStr, meta::ParseNestedMeta, parse::Parser};

use crate::expand::Kind;

/// A tool's task mode.
pub(crate) enum TaskMode {
    Optional,
    Required,
    Forbidden,
}

/// Everything an attribute can say.
#[derive(Default)]
pub(crate) struct ItemAttrs {
    pub uri: Option<LitStr>,
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub description: Option<LitStr>,
    pub mime_type: Option<LitStr>,
    pub tags: Vec<LitStr>,
    pub version: Option<Lit>,
    pub requires: Vec<LitStr>,
    pub task: Option<TaskMode>,
    pub timeout_secs: Option<syn::LitInt>,
    pub data: Vec<Expr>,
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

impl ItemAttrs {
    pub(crate) fn parse(kind: Kind, tokens: proc_macro2::TokenStream) -> syn::Result<Self> {
        let mut attrs = ItemAttrs::default();
        // A leading string literal is the resource's URI: `#[resource("users://{id}")]`.
        let tokens = if kind == Kind::Resource {
            match syn::parse2::<LeadingUri>(tokens.clone()) {
                Ok(LeadingUri { uri, rest }) => {
                    attrs.uri = Some(uri);
                    rest
                }
                Err(_) => tokens,
            }
        } else {
            tokens
        };
        syn::meta::parser(|meta| attrs.one(kind, meta)).parse2(tokens)?;
        if kind == Kind::Resource && attrs.uri.is_none() {
            return Err(syn::Error::new(
                Span::call_site(),
                "a resource needs its URI: `#[resource(\"scheme://path\")]` or `#[resource(uri = \"...\")]`",
            ));
        }
        Ok(attrs)
    }

    fn one(&mut self, kind: Kind, meta: ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        let tool_only = |what: &str| {
            if kind == Kind::Tool {
                Ok(())
            } else {
                Err(meta.error(format!("`{what}` applies to tools only")))
            }
        };
        match key.as_str() {
            "name" => self.name = Some(meta.value()?.parse()?),
            "title" => self.title = Some(meta.value()?.parse()?),
            "description" => self.description = Some(meta.value()?.parse()?),
            "tags" => self.tags = string_list(&meta)?,
            "requires" => self.requires = string_list(&meta)?,
            "version" => {
                let lit: Lit = meta.value()?.parse()?;
                match lit {
                    Lit::Str(_) | Lit::Int(_) | Lit::Float(_) => self.version = Some(lit),
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            "a version is a string or a number: `version = \"1.2\"` or `version = 2`",
                        ));
                    }
                }
            }
            "uri" if kind == Kind::Resource => self.uri = Some(meta.value()?.parse()?),
            "mime_type" if kind == Kind::Resource => self.mime_type = Some(meta.value()?.parse()?),
            "task" => {
                tool_only("task")?;
                self.task = Some(if meta.input.peek(syn::Token![=]) {
                    let mode: LitStr = meta.value()?.parse()?;
                    match mode.value().as_str() {
                        "optional" => TaskMode::Optional,
                        "required" => TaskMode::Required,
                        "forbidden" => TaskMode::Forbidden,
                        _ => {
                            return Err(syn::Error::new_spanned(
                                mode,
                                "the task mode is \"optional\", \"required\" or \"forbidden\"",
                            ));
                        }
                    }
                } else {
                    TaskMode::Optional
                });
            }
            "timeout_secs" => {
                tool_only("timeout_secs")?;
                self.timeout_secs = Some(meta.value()?.parse()?);
            }
            "data" => {
                tool_only("data")?;
                self.data.push(meta.value()?.parse()?);
            }
            "read_only" | "destructive" | "idempotent" | "open_world" => {
                tool_only(&key)?;
                let value = flag(&meta)?;
                let slot = match key.as_str() {
                    "read_only" => &mut self.read_only,
                    "destructive" => &mut self.destructive,
                    "idempotent" => &mut self.idempotent,
                    _ => &mut self.open_world,
                };
                *slot = Some(value);
            }
            _ => {
                let known = match kind {
                    Kind::Tool => {
                        "name, title, description, tags, version, requires, task, timeout_secs, data, read_only, destructive, idempotent, open_world"
                    }
                    Kind::Resource => {
                        "uri, name, title, description, mime_type, tags, version, requires"
                    }
                    Kind::Prompt => "name, title, description, tags, version, requires",
                };
                return Err(meta.error(format!(
                    "unknown attribute `{}`; expected one of: {known}",
                    path_text(&meta.path)
                )));
            }
        }
        Ok(())
    }
}

/// `flag` or `flag = true|false`.
fn flag(meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
    if meta.input.peek(syn::Token![=]) {
        let value: LitBool = meta.value()?.parse()?;
        Ok(value.value)
    } else {
        Ok(true)
    }
}

/// `key = ["a", "b"]` or `key = "a"`.
fn string_list(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<LitStr>> {
    let expr: Expr = meta.value()?.parse()?;
    let items = match expr {
        Expr::Array(array) => array.elems.into_iter().collect(),
        other => vec![other],
    };
    items
        .into_iter()
        .map(|item| match item {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => Ok(s),
            other => Err(syn::Error::new_spanned(
                other,
                "expected a string or a list of strings: `[\"a\", \"b\"]`",
            )),
        })
        .collect()
}

fn path_text(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// A leading URI literal, optionally followed by `, key = value, ...`.
struct LeadingUri {
    uri: LitStr,
    rest: proc_macro2::TokenStream,
}

impl syn::parse::Parse for LeadingUri {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let uri: LitStr = input.parse()?;
        if !input.is_empty() {
            input.parse::<syn::Token![,]>()?;
        }
        Ok(LeadingUri {
            uri,
            rest: input.parse()?,
        })
    }
}
