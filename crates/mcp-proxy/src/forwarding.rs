//! Per-request header forwarding over one shared HTTP session.
//!
//! The session is shared by every client of the proxy, so client headers cannot be set on
//! it. Instead each upstream request carries the headers its [`HeaderPolicy`] lets through
//! as a typed value in the request's extensions ([`ForwardedHeaders`]); rmcp hands the message
//! (extensions included, it is never serialized on the way) to the HTTP client, and
//! [`ForwardingClient`] adds them to that one POST. Headers configured on the target win over
//! forwarded ones, and a forwarded `Authorization` never replaces a configured bearer.

use std::{collections::HashMap, sync::Arc};

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

/// The client headers one upstream request forwards (already filtered by the policy).
#[derive(Debug, Clone)]
pub(crate) struct ForwardedHeaders(pub(crate) HeaderMap);

/// reqwest, plus the forwarded headers of each request.
#[derive(Clone)]
pub(crate) struct ForwardingClient(pub(crate) reqwest::Client);

type Headers = HashMap<HeaderName, HeaderValue>;

/// `configured` plus the headers `message` forwards, the configured ones first.
fn with_forwarded(
    message: &ClientJsonRpcMessage,
    bearer: bool,
    mut configured: Headers,
) -> Headers {
    let JsonRpcMessage::Request(request) = message else {
        return configured;
    };
    let Some(ForwardedHeaders(forwarded)) = request.request.extensions().get::<ForwardedHeaders>()
    else {
        return configured;
    };
    for (name, value) in forwarded {
        if bearer && name == header::AUTHORIZATION {
            continue;
        }
        configured
            .entry(name.clone())
            .or_insert_with(|| value.clone());
    }
    configured
}

impl StreamableHttpClient for ForwardingClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let headers = with_forwarded(&message, auth_header.is_some(), custom_headers);
        self.0
            .post_message(uri, message, session_id, auth_header, headers)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let headers = with_forwarded(&message, auth_header.is_some(), custom_headers);
        self.0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                max_sse_event_size,
            )
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let headers = with_forwarded(&message, auth_header.is_some(), custom_headers);
        self.0
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                limits,
            )
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<Self::Error>,
    > {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<Self::Error>,
    > {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
