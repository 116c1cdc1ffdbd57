//! The function's parameters: which are arguments (fields of the generated arguments
//! struct) and which are extractors (passed through as they are).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{FnArg, Ident, LitStr, Pat, Type};

/// Extractors of ferrymcp, recognized by the last segment of their type's path.
const CONTEXT_EXTRACTORS: &[&str] = &[
    "Context",
    "CancellationToken",
    "CurrentServer",
    "Principal",
    "BearerToken",
    "State",
    "Engine",
];

/// Extractors that take the call's arguments themselves: with one of them, the function
/// has no other argument parameters.
const ARGUMENT_EXTRACTORS: &[&str] = &["Args", "RawArgs", "Target"];

/// One parameter of the function.
pub(crate) enum Param {
    /// An argument: a field of the generated struct.
    Argument {
        ident: Ident,
        ty: Type,
        description: Option<LitStr>,
        rename: Option<LitStr>,
        default: bool,
    },
    /// An extractor, passed through.
    Extractor { ty: Type, consumes_arguments: bool },
}

/// Reads the parameters, stripping the `#[arg]` and `#[extract]` helper attributes from
/// the function so it compiles as written.
pub(crate) fn parse(
    inputs: &mut syn::punctuated::Punctuated<FnArg, syn::Token![,]>,
) -> syn::Result<Vec<Param>> {
    let mut params = Vec::new();
    let mut errors: Option<syn::Error> = None;
    let mut push_error = |error: syn::Error| match errors.as_mut() {
        Some(all) => all.combine(error),
        None => errors = Some(error),
    };
    for input in inputs.iter_mut() {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                push_error(syn::Error::new_spanned(
                    receiver,
                    "a tool, resource or prompt is a free function: it cannot take `self`",
                ));
                continue;
            }
            FnArg::Typed(typed) => typed,
        };
        let mut extract = false;
        let mut argument = false;
        let mut description = None;
        let mut rename = None;
        let mut default = false;
        let mut kept = Vec::new();
        for attr in typed.attrs.drain(..) {
            if attr.path().is_ident("extract") {
                extract = true;
            } else if attr.path().is_ident("arg") {
                argument = true;
                if matches!(attr.meta, syn::Meta::Path(_)) {
                    continue;
                }
                let parsed = attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("description") {
                        description = Some(meta.value()?.parse()?);
                    } else if meta.path.is_ident("rename") {
                        rename = Some(meta.value()?.parse()?);
                    } else if meta.path.is_ident("default") {
                        default = true;
                    } else {
                        return Err(meta.error(
                            "unknown `arg` attribute; expected `description = \"...\"`, `rename = \"...\"` or `default`",
                        ));
                    }
                    Ok(())
                });
                if let Err(error) = parsed {
                    push_error(error);
                }
            } else if attr.path().is_ident("doc") {
                description = description.or_else(|| doc_text(std::slice::from_ref(&attr)));
            } else {
                kept.push(attr);
            }
        }
        typed.attrs = kept;
        let ty = (*typed.ty).clone();
        if extract && argument {
            push_error(syn::Error::new_spanned(
                &ty,
                "a parameter is either `#[extract]` or `#[arg]`, not both",
            ));
            continue;
        }
        if extract || (!argument && extractor_name(&ty).is_some()) {
            let consumes_arguments = !extract
                && extractor_name(&ty)
                    .is_some_and(|name| ARGUMENT_EXTRACTORS.contains(&name.as_str()));
            params.push(Param::Extractor {
                ty,
                consumes_arguments,
            });
            continue;
        }
        let ident = match &*typed.pat {
            Pat::Ident(pat) if pat.subpat.is_none() => pat.ident.clone(),
            other => {
                push_error(syn::Error::new_spanned(
                    other,
                    "an argument needs a plain name (`path: String`), which becomes its name in the input schema",
                ));
                continue;
            }
        };
        if let Type::Reference(reference) = &ty {
            push_error(syn::Error::new_spanned(
                reference,
                "arguments are deserialized into owned values: take `String` instead of `&str`, `Vec<T>` instead of `&[T]`",
            ));
            continue;
        }
        params.push(Param::Argument {
            ident,
            ty,
            description,
            rename,
            default,
        });
    }
    match errors {
        Some(error) => Err(error),
        None => Ok(params),
    }
}

/// The name of a built-in extractor `ty` is (also through `Option<..>`), if it is one.
fn extractor_name(ty: &Type) -> Option<String> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    let name = last.ident.to_string();
    if CONTEXT_EXTRACTORS.contains(&name.as_str()) || ARGUMENT_EXTRACTORS.contains(&name.as_str()) {
        return Some(name);
    }
    if name != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let Some(syn::GenericArgument::Type(inner)) = args.args.first() else {
        return None;
    };
    extractor_name(inner).filter(|inner| matches!(inner.as_str(), "Principal" | "BearerToken"))
}

/// The doc comment's text, lines joined, common indentation of one space removed.
pub(crate) fn doc_text(attrs: &[syn::Attribute]) -> Option<LitStr> {
    let mut lines = Vec::new();
    let mut span = None;
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(syn::MetaNameValue {
            value:
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(text),
                    ..
                }),
            ..
        }) = &attr.meta
        {
            span.get_or_insert(text.span());
            let value = text.value();
            lines.push(
                value
                    .strip_prefix(' ')
                    .unwrap_or(&value)
                    .trim_end()
                    .to_owned(),
            );
        }
    }
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty())
        .then(|| LitStr::new(&text, span.unwrap_or_else(proc_macro2::Span::call_site)))
}

/// What the generated code needs from the parameters.
pub(crate) struct Plan {
    /// The arguments struct, if the function has argument parameters.
    pub args_struct: Option<TokenStream>,
    /// The wrapper closure's parameters, in the handler's order (extractors first, the
    /// arguments last).
    pub wrapper_params: Vec<TokenStream>,
    /// The expressions passed to the function, in its own order.
    pub call_args: Vec<TokenStream>,
}

pub(crate) fn plan(params: &[Param], core: &TokenStream, struct_name: &Ident) -> syn::Result<Plan> {
    let mut fields = Vec::new();
    let mut field_idents = Vec::new();
    let mut wrapper_params = Vec::new();
    let mut call_args = Vec::new();
    let mut consumer: Option<&Type> = None;
    for (index, param) in params.iter().enumerate() {
        match param {
            Param::Extractor {
                ty,
                consumes_arguments,
            } => {
                let binding = format_ident!("__extracted_{index}");
                if *consumes_arguments {
                    if let Some(first) = consumer {
                        let mut error = syn::Error::new_spanned(
                            ty,
                            "only one parameter can take the call's arguments",
                        );
                        error.combine(syn::Error::new_spanned(first, "this one already does"));
                        return Err(error);
                    }
                    consumer = Some(ty);
                }
                wrapper_params.push(quote!(#binding: #ty));
                call_args.push(quote!(#binding));
            }
            Param::Argument {
                ident,
                ty,
                description,
                rename,
                default,
            } => {
                let description = description
                    .as_ref()
                    .map(|d| quote!(#[schemars(description = #d)]));
                let rename = rename.as_ref().map(|r| quote!(#[serde(rename = #r)]));
                let default = default.then(|| quote!(#[serde(default)]));
                fields.push(quote!(#description #rename #default #ident: #ty));
                field_idents.push(ident.clone());
                call_args.push(quote!(#ident));
            }
        }
    }
    if let (Some(consumer), false) = (consumer, fields.is_empty()) {
        return Err(syn::Error::new_spanned(
            consumer,
            "this parameter takes all of the call's arguments, so the function cannot also have argument parameters; make them fields of its type",
        ));
    }
    // The argument consumer must come last in the handler: move it there.
    if consumer.is_some()
        && let Some(position) = params.iter().position(|p| {
            matches!(
                p,
                Param::Extractor {
                    consumes_arguments: true,
                    ..
                }
            )
        })
    {
        let taken = wrapper_params.remove(position);
        wrapper_params.push(taken);
    }
    let args_struct = if fields.is_empty() {
        None
    } else {
        let serde_path = LitStr::new(
            &format!("{core}::__private::serde").replace(' ', ""),
            proc_macro2::Span::call_site(),
        );
        let schemars_path = LitStr::new(
            &format!("{core}::__private::schemars").replace(' ', ""),
            proc_macro2::Span::call_site(),
        );
        wrapper_params.push(
            quote!(#core::Args(#struct_name { #(#field_idents),* }): #core::Args<#struct_name>),
        );
        Some(quote! {
            #[derive(#core::__private::serde::Deserialize, #core::__private::schemars::JsonSchema)]
            #[serde(crate = #serde_path)]
            #[schemars(crate = #schemars_path)]
            #[allow(non_camel_case_types)]
            struct #struct_name { #(#fields),* }
        })
    };
    Ok(Plan {
        args_struct,
        wrapper_params,
        call_args,
    })
}
