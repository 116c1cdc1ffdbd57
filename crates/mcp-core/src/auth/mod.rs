//! Who is calling and what they may use.
//!
//! A [`Principal`] is the caller as a token verifier established it (issuer, client,
//! subject, scopes, claims). Over HTTP the resource server (the `auth` feature) verifies
//! each request's bearer token and puts the principal into the request; a custom layer or
//! middleware may do the same, and in-process callers set it on a
//! [`RequestScope`](crate::RequestScope) with [`with_principal`](crate::RequestScope::with_principal).
//! Features that bind state to a caller (the tasks extension scopes tasks by it) read it
//! with [`RequestScope::principal`](crate::RequestScope::principal).
//!
//! A [`Requirement`] (scopes, or a predicate over the principal) on a tool, resource,
//! template, prompt or mount says who may use it; a [`ScopeMatcher`] decides whether a
//! granted scope covers a required one.

mod principal;
mod requirement;
#[cfg(feature = "auth")]
mod resource_server;
mod token;
#[cfg(feature = "auth")]
pub mod verify;

pub use principal::Principal;
pub use requirement::{Access, ExactScopes, Operation, Requirement, ScopeMatcher};
pub use token::BearerToken;

#[cfg(feature = "auth")]
pub use resource_server::{InvalidResource, METADATA_PATH, ResourceServer};
