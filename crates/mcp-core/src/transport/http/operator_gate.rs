//! The checks in front of operators' routes (an admin page and its API), as in front of the
//! MCP endpoint: `Host` and `Origin` (no DNS rebinding into a loopback admin page), then,
//! when the server takes bearer tokens, a valid token whose principal holds the operators'
//! scope (403 with an `insufficient_scope` challenge otherwise).

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::Response,
};

use super::{config::Access, endpoint::refused, origin, reject_log::RejectLog};

/// What the operators' routes are checked against.
pub(super) struct OperatorGate {
    pub(super) access: Access,
    pub(super) log: Arc<RejectLog>,
    #[cfg(feature = "auth")]
    pub(super) gate: Option<Arc<super::bearer::Gate>>,
    /// The scope an operator's token must hold.
    #[cfg_attr(not(feature = "auth"), allow(dead_code))]
    pub(super) scope: String,
}

/// The middleware of the operators' routes.
pub(super) async fn guard(
    State(operators): State<Arc<OperatorGate>>,
    request: Request,
    next: Next,
) -> Response {
    #[cfg_attr(not(feature = "auth"), allow(unused_mut))]
    let (mut parts, body) = request.into_parts();
    if let Err(refusal) = origin::check(&operators.access, &parts) {
        return refused(&operators.log, refusal);
    }
    #[cfg(feature = "auth")]
    if let Some(gate) = &operators.gate {
        match gate.authenticate(&mut parts, &operators.log).await {
            Ok(caller) => {
                if !caller.principal.has_scope(&operators.scope) {
                    return gate.refuse_scope(&operators.scope);
                }
            }
            Err(response) => return response,
        }
    }
    next.run(Request::from_parts(parts, body)).await
}
