//! The resource server at the MCP endpoint: every request (POST, GET, DELETE) must carry a
//! bearer token in the `Authorization` header that the configured verifier accepts; the
//! operation a POST asks for is authorized before dispatch (403 with the scopes it needs);
//! a 2025-11-25 session belongs to the principal that opened it.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::{
    probe::Probe,
    reject_log::{Kind, RejectLog},
    reply::{RETRY_AFTER_SECS, TRANSPORT_REFUSED, json_rpc_error, unknown_session},
};
use crate::{
    Server,
    auth::{Access, BearerToken, Operation, Principal, ResourceServer, verify::VerifyError},
};

/// The JSON-RPC code of an authentication or authorization refusal at the HTTP edge.
const UNAUTHORIZED: i32 = -32001;

/// What the endpoint authenticates and authorizes with.
pub(super) struct Gate {
    pub(super) resource: ResourceServer,
    pub(super) server: Server,
    /// Session id → the scope key of the principal that opened it.
    owners: Mutex<HashMap<String, String>>,
    max_sessions: usize,
}

/// The caller of a request that passed authentication.
pub(super) struct Caller {
    pub(super) principal: Arc<Principal>,
}

impl Caller {
    /// The key sessions are bound by (worked out only when a session is involved).
    fn key(&self) -> String {
        self.principal.scope_key()
    }
}

impl Gate {
    /// The gate of `config`'s resource server in front of `server`, if it has one.
    pub(super) fn of(config: &super::HttpConfig, server: &Server) -> Option<Arc<Self>> {
        let resource = config.auth.clone()?;
        Some(Arc::new(Self::new(
            resource,
            server.clone(),
            config.max_sessions,
        )))
    }

    pub(super) fn new(resource: ResourceServer, server: Server, max_sessions: usize) -> Self {
        Self {
            resource,
            server,
            owners: Mutex::new(HashMap::new()),
            max_sessions,
        }
    }

    /// Verifies the request's bearer token and puts the principal and the token into its
    /// extensions, or answers 401 (503 when the token cannot be checked now).
    pub(super) async fn authenticate(
        &self,
        parts: &mut http::request::Parts,
        log: &RejectLog,
    ) -> Result<Caller, Response> {
        let in_query = parts.uri.query().is_some_and(|query| {
            query
                .split('&')
                .any(|pair| pair.starts_with("access_token="))
        });
        let header = bearer(&parts.headers);
        if in_query && !matches!(header, Err(Missing::NoToken)) {
            // A token in the URL as well as in the header: one method only (RFC 6750 §2).
            let why = "the access token is sent in both the Authorization header and the URL; send it in the header only";
            log.refused(Kind::Auth, &why);
            let mut response = json_rpc_error(
                http::StatusCode::BAD_REQUEST,
                serde_json::Value::Null,
                UNAUTHORIZED,
                format!("Bad request: {why}"),
            );
            insert_challenge(&mut response, &self.resource.challenge_bad_request(why));
            return Err(response);
        }
        let token = match header {
            Ok(token) => token,
            Err(Missing::NoToken) => {
                let message = if in_query {
                    "Unauthorized: send the access token in the Authorization header, never in the URL"
                } else {
                    "Unauthorized: this server needs an access token (Authorization: Bearer)"
                };
                return Err(self.unauthorized(self.resource.challenge_missing(), message));
            }
            Err(Missing::Malformed(why)) => {
                log.refused(Kind::Auth, &why);
                return Err(self.unauthorized(
                    self.resource.challenge_invalid(why),
                    &format!("Unauthorized: {why}"),
                ));
            }
        };
        match self.resource.verifier().verify(token).await {
            Ok(verified) => {
                // Shared: the request's extensions are cloned several times on its way.
                let principal = Arc::new(verified.principal);
                parts.extensions.insert(BearerToken::new(token));
                parts.extensions.insert(Arc::clone(&principal));
                Ok(Caller { principal })
            }
            Err(VerifyError::Invalid(why)) => {
                log.refused(Kind::Auth, &format_args!("a token was refused: {why}"));
                Err(self.unauthorized(
                    self.resource.challenge_invalid(&why),
                    &format!("Unauthorized: invalid token: {why}"),
                ))
            }
            Err(VerifyError::Unavailable(why)) => {
                log.refused(
                    Kind::Auth,
                    &format_args!("tokens cannot be verified: {why}"),
                );
                let mut response = json_rpc_error(
                    http::StatusCode::SERVICE_UNAVAILABLE,
                    serde_json::Value::Null,
                    TRANSPORT_REFUSED,
                    "the access token cannot be verified now; retry later".to_owned(),
                );
                response.headers_mut().insert(
                    http::header::RETRY_AFTER,
                    http::HeaderValue::from(RETRY_AFTER_SECS),
                );
                Err(response)
            }
        }
    }

    /// The 403 for an operation the caller may not perform, decided from the body.
    pub(super) fn refuse_operation(&self, caller: &Caller, probe: &Probe) -> Option<Response> {
        let method = probe.method.as_deref()?;
        let operation = match (method, probe.name.as_deref(), probe.uri.as_deref()) {
            ("tools/call", Some(name), _) => Operation::CallTool(name),
            ("prompts/get", Some(name), _) => Operation::GetPrompt(name),
            ("resources/read", _, Some(uri)) => Operation::ReadResource(uri),
            (method, _, _) => Operation::Other(method),
        };
        match self.server.authorize(Some(&caller.principal), operation) {
            Access::Allowed => None,
            Access::Denied { scopes } => {
                let challenge = self.resource.challenge_insufficient(&scopes);
                let message = if scopes.is_empty() {
                    format!("Forbidden: this caller may not use {method}")
                } else {
                    format!(
                        "Forbidden: insufficient scope; this request needs: {}",
                        scopes.join(" ")
                    )
                };
                let mut response = json_rpc_error(
                    http::StatusCode::FORBIDDEN,
                    probe.id.clone().unwrap_or(serde_json::Value::Null),
                    UNAUTHORIZED,
                    message,
                );
                insert_challenge(&mut response, &challenge);
                Some(response)
            }
        }
    }

    /// The 403 of an operators' route for a caller without the operators' `scope`.
    pub(super) fn refuse_scope(&self, scope: &str) -> Response {
        let challenge = self.resource.challenge_insufficient(&[scope.to_owned()]);
        let mut response = json_rpc_error(
            http::StatusCode::FORBIDDEN,
            serde_json::Value::Null,
            UNAUTHORIZED,
            format!("Forbidden: insufficient scope; operators' routes need: {scope}"),
        );
        insert_challenge(&mut response, &challenge);
        response
    }

    /// Refuses a request naming a session another principal opened, answering as for a
    /// session that does not exist.
    pub(super) fn refuse_session(
        &self,
        caller: &Caller,
        headers: &http::HeaderMap,
    ) -> Option<Response> {
        let id = headers
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())?;
        let owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        match owners.get(id) {
            Some(owner) if *owner != caller.key() => Some(unknown_session()),
            _ => None,
        }
    }

    /// Records who opened the session an `initialize` answer named (`id`, its
    /// `Mcp-Session-Id` header).
    pub(super) async fn opened(&self, caller: &Caller, id: &str, sessions: &LocalSessionManager) {
        let prune = {
            let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
            owners.insert(id.to_owned(), caller.key());
            owners.len() > self.max_sessions.saturating_mul(2)
        };
        if prune {
            // Forget the owners of sessions that have ended.
            let live: std::collections::HashSet<String> = sessions
                .sessions
                .read()
                .await
                .keys()
                .map(ToString::to_string)
                .collect();
            self.owners
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .retain(|id, _| live.contains(id));
        }
    }

    /// Forgets a session its owner deleted.
    pub(super) fn closed(&self, headers: &http::HeaderMap) {
        if let Some(id) = headers
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
        {
            self.owners
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(id);
        }
    }

    fn unauthorized(&self, challenge: String, message: &str) -> Response {
        let mut response = json_rpc_error(
            http::StatusCode::UNAUTHORIZED,
            serde_json::Value::Null,
            UNAUTHORIZED,
            message.to_owned(),
        );
        insert_challenge(&mut response, &challenge);
        response
    }
}

fn insert_challenge(response: &mut Response, challenge: &str) {
    if let Ok(value) = http::HeaderValue::from_str(challenge) {
        response
            .headers_mut()
            .insert(http::header::WWW_AUTHENTICATE, value);
    }
}

enum Missing {
    /// No `Authorization: Bearer` header: the challenge carries no error.
    NoToken,
    /// A bearer header that cannot hold a token.
    Malformed(&'static str),
}

/// The token of the request's single `Authorization: Bearer` header.
fn bearer(headers: &http::HeaderMap) -> Result<&str, Missing> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Err(Missing::NoToken);
    };
    if values.next().is_some() {
        return Err(Missing::Malformed("more than one Authorization header"));
    }
    let Ok(value) = value.to_str() else {
        return Err(Missing::Malformed("the Authorization header is not ASCII"));
    };
    let Some((scheme, token)) = value.split_once(' ') else {
        return Err(if value.eq_ignore_ascii_case("bearer") {
            Missing::Malformed("the bearer token is empty")
        } else {
            Missing::NoToken
        });
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Missing::NoToken);
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(Missing::Malformed("the bearer token is empty"));
    }
    Ok(token)
}
