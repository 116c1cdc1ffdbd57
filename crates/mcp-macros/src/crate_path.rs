//! The path of the crate the generated code names: the facade (`ferrymcp`) when the user
//! depends on it, else `ferrymcp-core`, under whatever name their Cargo.toml gives it.

use proc_macro_crate::{FoundCrate, crate_name};
use proc_macro2::{Span, TokenStream};
use quote::quote;

pub(crate) fn core() -> TokenStream {
    for package in ["ferrymcp", "ferrymcp-core"] {
        if let Ok(found) = crate_name(package) {
            let name = match found {
                // Within the package itself, the generated code is in one of its tests,
                // examples or doc tests, which name it like any dependent does.
                FoundCrate::Itself => package.replace('-', "_"),
                FoundCrate::Name(name) => name,
            };
            let ident = syn::Ident::new(&name, Span::call_site());
            return quote!(::#ident);
        }
    }
    quote!(::ferrymcp)
}
