//! Per-request headers and credentials over one shared HTTP session.
//!
//! The session is shared by every client of the proxy, so client headers cannot be set on
//! it. Instead each upstream request carries the headers its [`HeaderPolicy`] lets through
//! as a typed value in the request's extensions ([`ForwardedHeaders`]); rmcp hands the message
//! (extensions included, it is never serialized on the way) to the HTTP client, and
//! [`ForwardingClient`] adds them to that one POST. Headers configured on the target win over
//! forwarded ones; a client's `Authorization` is never forwarded.
//!
//! The upstream's `Authorization` is chosen per POST the same way: a request made for a
//! client carries its [`RequestToken`] (a client-credentials token, or one exchanged for the
//! caller's); the session's own messages (the handshake, notifications, the GET stream, the
//! DELETE) get the proxy's own token. A `401` drops the token, and the POST is sent once more
//! with a new one.

use std::{collections::HashMap, future::Future, sync::Arc};

use futures::stream::BoxStream;
use http::{HeaderMap, HeaderName, HeaderValue, header};
use rmcp::{
    model::{ClientJsonRpcMessage, GetExtensions as _, JsonRpcMessage},
    transport::streamable_http_client::{
        SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
        StreamableHttpResponseLimits,
    },
};

#[cfg(doc)]
use crate::HeaderPolicy;
use crate::{
    post_client::PostClient,
    upstream_auth::{Credentials, RequestToken},
};

/// The client headers one upstream request forwards (already filtered by the policy).
#[derive(Debug, Clone)]
pub(crate) struct ForwardedHeaders(pub(crate) HeaderMap);

/// reqwest, plus the forwarded headers and the upstream credentials of each request.
#[derive(Clone)]
pub(crate) struct ForwardingClient {
    pub(crate) http: reqwest::Client,
    pub(crate) credentials: Option<Arc<Credentials>>,
    /// The client of the direct 2026-07-28 posts (`stateless.rs`).
    pub(crate) post: PostClient,
}

type Headers = HashMap<HeaderName, HeaderValue>;
type PostResult = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;

/// `configured` plus the headers `message` forwards, the configured ones first; never a
/// client's `Authorization`.
fn with_forwarded(message: &ClientJsonRpcMessage, mut configured: Headers) -> Headers {
    let JsonRpcMessage::Request(request) = message else {
        return configured;
    };
    let Some(ForwardedHeaders(forwarded)) = request.request.extensions().get::<ForwardedHeaders>()
    else {
        return configured;
    };
    for (name, value) in forwarded {
        if name == header::AUTHORIZATION || name == header::PROXY_AUTHORIZATION {
            continue;
        }
        configured
            .entry(name.clone())
            .or_insert_with(|| value.clone());
    }
    configured
}

/// Whether the upstream refused the credentials (HTTP 401).
fn unauthorized(error: &StreamableHttpError<reqwest::Error>) -> bool {
    match error {
        StreamableHttpError::AuthRequired(_) => true,
        StreamableHttpError::HttpStatus(status) => status.status == 401,
        StreamableHttpError::Client(error) => {
            error.status() == Some(reqwest::StatusCode::UNAUTHORIZED)
        }
        _ => false,
    }
}

fn no_token(error: impl std::fmt::Display) -> StreamableHttpError<reqwest::Error> {
    StreamableHttpError::UnexpectedServerResponse(
        format!("no access token for the upstream: {error}").into(),
    )
}

impl ForwardingClient {
    /// The token of `message`: the one the request carries, else the proxy's own.
    async fn token_of(
        &self,
        message: &ClientJsonRpcMessage,
    ) -> Result<Option<RequestToken>, StreamableHttpError<reqwest::Error>> {
        let Some(credentials) = &self.credentials else {
            return Ok(None);
        };
        if let JsonRpcMessage::Request(request) = message
            && let Some(token) = request.request.extensions().get::<RequestToken>()
        {
            return Ok(Some(token.clone()));
        }
        credentials.own().await.map(Some).map_err(no_token)
    }

    /// The proxy's own token, for the GET stream and the DELETE.
    async fn own_token(&self) -> Result<Option<String>, StreamableHttpError<reqwest::Error>> {
        match &self.credentials {
            Some(credentials) => credentials
                .own()
                .await
                .map(|t| Some(t.token.to_string()))
                .map_err(no_token),
            None => Ok(None),
        }
    }

    /// Sends `message` with `send` and its token; after a `401`, once more with a new token.
    async fn post_authorized<F, Fut>(
        &self,
        message: ClientJsonRpcMessage,
        custom_headers: Headers,
        send: F,
    ) -> PostResult
    where
        F: Fn(ClientJsonRpcMessage, Option<String>, Headers) -> Fut,
        Fut: Future<Output = PostResult>,
    {
        let headers = with_forwarded(&message, custom_headers);
        let token = self.token_of(&message).await?;
        let (Some(credentials), Some(token)) = (&self.credentials, token) else {
            return send(message, None, headers).await;
        };
        if !credentials.refreshable() {
            return send(message, Some(token.token.to_string()), headers).await;
        }
        let retry = (message.clone(), headers.clone());
        match send(message, Some(token.token.to_string()), headers).await {
            Err(error) if unauthorized(&error) => {
                tracing::debug!("the upstream refused its token (401); fetching a new one");
                let Ok(fresh) = credentials.renew(&token).await else {
                    return Err(error);
                };
                let (message, headers) = retry;
                send(message, Some(fresh.token.to_string()), headers).await
            }
            other => other,
        }
    }
}

impl StreamableHttpClient for ForwardingClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let http = &self.http;
        self.post_authorized(message, custom_headers, |message, auth, headers| {
            http.post_message(uri.clone(), message, session_id.clone(), auth, headers)
        })
        .await
        .map_err(redacted)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let http = &self.http;
        self.post_authorized(message, custom_headers, |message, auth, headers| {
            http.post_message_with_max_sse_event_size(
                uri.clone(),
                message,
                session_id.clone(),
                auth,
                headers,
                max_sse_event_size,
            )
        })
        .await
        .map_err(redacted)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let http = &self.http;
        self.post_authorized(message, custom_headers, |message, auth, headers| {
            http.post_message_with_response_limits(
                uri.clone(),
                message,
                session_id.clone(),
                auth,
                headers,
                limits,
            )
        })
        .await
        .map_err(redacted)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        let auth_header = self.own_token().await?;
        self.http
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
            .map_err(redacted)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<Self::Error>,
    > {
        let auth_header = self.own_token().await?;
        self.http
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
            .map_err(redacted)
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<Self::Error>,
    > {
        let auth_header = self.own_token().await?;
        self.http
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
            .map_err(redacted)
    }
}

/// `error` with the secrets of its URL redacted: rmcp logs its client's errors as they are,
/// and reqwest's quote the URL they were for (an upstream's may hold a token in its query).
fn redacted(error: StreamableHttpError<reqwest::Error>) -> StreamableHttpError<reqwest::Error> {
    match error {
        StreamableHttpError::Client(error) => {
            StreamableHttpError::Client(crate::url_secrets::redact_error(error))
        }
        other => other,
    }
}
