//! Proxied resources, resource templates and prompts: read from the upstream's listings,
//! registered on the proxy server with every field kept (`mirror.rs` keeps them current),
//! and forwarded on use.
//!
//! A kind the upstream does not serve (`-32601` on its list method) is simply absent. Reads
//! and renders go to the upstream with the URI or name as the upstream knows it (a mount
//! above the proxy strips its namespace first), with the client's input-round answers
//! (`inputResponses`, and the upstream's own `requestState`, which the front seals and
//! opens like any handler state); the upstream's answer, an input round included, comes
//! back as it is, and its errors keep their code and message.

use ferrymcp_core::{
    Context, PromptDef, RawArgs, ResourceDef, Target, ToolError,
    completion::Completion,
    types::{
        ErrorCode, GetPromptRequestParams, GetPromptResponse, JsonObject,
        ReadResourceRequestParams, ReadResourceResponse, ServerResult,
    },
};
use rmcp::model::{
    ArgumentInfo, ClientRequest, CompleteRequest, CompleteRequestParams, CompletionContext,
    CompletionInfo, GetPromptRequest, ListPromptsRequest, ListResourceTemplatesRequest,
    ListResourcesRequest, PaginatedRequestParams, Prompt, ReadResourceRequest, Reference, Resource,
    ResourceTemplate,
};

use crate::{ProxyError, RequestOptions, Upstream};

/// One page of a list: its items and the next cursor.
type Page<T> = (Vec<T>, Option<String>);

/// Every item of a paged list, or `None` when the upstream does not serve the method.
async fn all_pages<T>(
    upstream: &Upstream,
    method: &str,
    request: impl Fn(Option<PaginatedRequestParams>) -> ClientRequest,
    page: impl Fn(ServerResult) -> Option<Page<T>>,
) -> Result<Option<Vec<T>>, ProxyError> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let result = match upstream
            .request(request(params), RequestOptions::default())
            .await
        {
            Ok(result) => result,
            Err(ProxyError::Upstream(error)) if error.code == ErrorCode::METHOD_NOT_FOUND => {
                return Ok(None);
            }
            Err(error) => return Err(error),
        };
        let Some((mut batch, next)) = page(result) else {
            return Err(ProxyError::Protocol {
                upstream: upstream.name().to_owned(),
                method: method.to_owned(),
                detail: "an answer of another kind".to_owned(),
            });
        };
        items.append(&mut batch);
        match next {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(Some(items)),
        }
    }
}

/// Every resource the upstream lists (none when it serves no resources).
pub(crate) async fn list_resources(upstream: &Upstream) -> Result<Vec<Resource>, ProxyError> {
    let listed = all_pages(
        upstream,
        "resources/list",
        |params| {
            ClientRequest::ListResourcesRequest(ListResourcesRequest {
                params,
                ..Default::default()
            })
        },
        |result| match result {
            ServerResult::ListResourcesResult(page) => Some((page.resources, page.next_cursor)),
            _ => None,
        },
    )
    .await?;
    Ok(listed.unwrap_or_default())
}

/// Every resource template the upstream lists (none when it serves no templates).
pub(crate) async fn list_templates(
    upstream: &Upstream,
) -> Result<Vec<ResourceTemplate>, ProxyError> {
    let listed = all_pages(
        upstream,
        "resources/templates/list",
        |params| {
            ClientRequest::ListResourceTemplatesRequest(ListResourceTemplatesRequest {
                params,
                ..Default::default()
            })
        },
        |result| match result {
            ServerResult::ListResourceTemplatesResult(page) => {
                Some((page.resource_templates, page.next_cursor))
            }
            _ => None,
        },
    )
    .await?;
    Ok(listed.unwrap_or_default())
}

/// Every prompt the upstream lists (none when it serves no prompts).
pub(crate) async fn list_prompts(upstream: &Upstream) -> Result<Vec<Prompt>, ProxyError> {
    let listed = all_pages(
        upstream,
        "prompts/list",
        |params| {
            ClientRequest::ListPromptsRequest(ListPromptsRequest {
                params,
                ..Default::default()
            })
        },
        |result| match result {
            ServerResult::ListPromptsResult(page) => Some((page.prompts, page.next_cursor)),
            _ => None,
        },
    )
    .await?;
    Ok(listed.unwrap_or_default())
}

/// Reads `uri` upstream, carrying the client's answers to an earlier input round.
async fn read(
    upstream: Upstream,
    cx: Context,
    uri: String,
) -> Result<ReadResourceResponse, ToolError> {
    let mut params = ReadResourceRequestParams::new(uri);
    params.input_responses = cx.input_responses().cloned();
    params.request_state = cx.request_state().map(str::to_owned);
    let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params));
    let result = upstream
        .request(request, RequestOptions::from_context(&cx))
        .await
        .map_err(|e| ToolError::protocol(e.into_error_data()))?;
    match result {
        ServerResult::ReadResourceResult(read) => Ok(ReadResourceResponse::Complete(read)),
        ServerResult::InputRequiredResult(round) => Ok(ReadResourceResponse::InputRequired(round)),
        _ => Err(ToolError::new(format!(
            "upstream '{}' answered resources/read with another kind of result",
            upstream.name()
        ))),
    }
}

pub(crate) fn proxy_resource(upstream: &Upstream, resource: Resource) -> ResourceDef {
    let source = upstream.clone();
    let mut def = ResourceDef::new(
        resource.uri.clone(),
        move |cx: Context, Target(uri): Target| read(source.clone(), cx, uri),
    )
    .name(resource.name);
    if let Some(title) = resource.title {
        def = def.title(title);
    }
    if let Some(description) = resource.description {
        def = def.description(description);
    }
    if let Some(mime_type) = resource.mime_type {
        def = def.mime_type(mime_type);
    }
    if let Some(size) = resource.size {
        def = def.size(size);
    }
    if let Some(icons) = resource.icons {
        def = def.icons(icons);
    }
    if let Some(meta) = resource.meta {
        def = def.meta(meta);
    }
    if let Some(annotations) = resource.annotations {
        def = def.annotations(annotations);
    }
    def
}

pub(crate) fn proxy_template(
    upstream: &Upstream,
    template: ResourceTemplate,
    completes: bool,
) -> ResourceDef {
    let source = upstream.clone();
    let variables: Vec<String> = if completes {
        ferrymcp_core::uri_template::UriTemplate::parse(&template.uri_template)
            .map(|t| t.variables().into_iter().map(str::to_owned).collect())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let reference = Reference::for_resource(template.uri_template.clone());
    let mut def = ResourceDef::new(
        template.uri_template.clone(),
        move |cx: Context, Target(uri): Target| read(source.clone(), cx, uri),
    )
    .name(template.name);
    if let Some(title) = template.title {
        def = def.title(title);
    }
    if let Some(description) = template.description {
        def = def.description(description);
    }
    if let Some(mime_type) = template.mime_type {
        def = def.mime_type(mime_type);
    }
    if let Some(icons) = template.icons {
        def = def.icons(icons);
    }
    if let Some(meta) = template.meta {
        def = def.meta(meta);
    }
    if let Some(annotations) = template.annotations {
        def = def.annotations(annotations);
    }
    for variable in variables {
        def = def.complete(variable, forward_completion(upstream, reference.clone()));
    }
    def
}

/// Renders `name` upstream, carrying the client's answers to an earlier input round.
async fn render(
    upstream: Upstream,
    cx: Context,
    name: String,
    arguments: JsonObject,
) -> Result<GetPromptResponse, ToolError> {
    let mut params = GetPromptRequestParams::new(name);
    if !arguments.is_empty() {
        params = params.with_arguments(arguments);
    }
    params.input_responses = cx.input_responses().cloned();
    params.request_state = cx.request_state().map(str::to_owned);
    let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
    let result = upstream
        .request(request, RequestOptions::from_context(&cx))
        .await
        .map_err(|e| ToolError::protocol(e.into_error_data()))?;
    match result {
        ServerResult::GetPromptResult(rendered) => Ok(GetPromptResponse::Complete(rendered)),
        ServerResult::InputRequiredResult(round) => Ok(GetPromptResponse::InputRequired(round)),
        _ => Err(ToolError::new(format!(
            "upstream '{}' answered prompts/get with another kind of result",
            upstream.name()
        ))),
    }
}

pub(crate) fn proxy_prompt(upstream: &Upstream, prompt: Prompt, completes: bool) -> PromptDef {
    let source = upstream.clone();
    let name = prompt.name.clone();
    let completed: Vec<String> = if completes {
        prompt
            .arguments
            .iter()
            .flatten()
            .map(|a| a.name.clone())
            .collect()
    } else {
        Vec::new()
    };
    let reference = Reference::for_prompt(prompt.name.clone());
    let mut def = PromptDef::new(prompt.name, move |cx: Context, RawArgs(args): RawArgs| {
        render(source.clone(), cx, name.clone(), args)
    })
    .arguments(prompt.arguments.unwrap_or_default());
    if let Some(title) = prompt.title {
        def = def.title(title);
    }
    if let Some(description) = prompt.description {
        def = def.description(description);
    }
    if let Some(icons) = prompt.icons {
        def = def.icons(icons);
    }
    if let Some(meta) = prompt.meta {
        def = def.meta(meta);
    }
    for argument in completed {
        def = def.complete(argument, forward_completion(upstream, reference.clone()));
    }
    def
}

/// A completer that asks the upstream, for the prompt or template `reference` there.
fn forward_completion(
    upstream: &Upstream,
    reference: Reference,
) -> impl Fn(Completion) -> ferrymcp_core::BoxFuture<'static, Result<CompletionInfo, ToolError>>
+ Send
+ Sync
+ 'static {
    let upstream = upstream.clone();
    move |completion: Completion| {
        let upstream = upstream.clone();
        let reference = reference.clone();
        Box::pin(async move { complete(upstream, reference, completion).await })
    }
}

/// Asks the upstream for suggestions.
async fn complete(
    upstream: Upstream,
    reference: Reference,
    completion: Completion,
) -> Result<CompletionInfo, ToolError> {
    let mut params = CompleteRequestParams::new(
        reference,
        ArgumentInfo::new(completion.argument(), completion.value()),
    );
    if !completion.arguments().is_empty() {
        params = params.with_context(CompletionContext::with_arguments(
            completion.arguments().clone(),
        ));
    }
    let request = ClientRequest::CompleteRequest(CompleteRequest::new(params));
    let result = upstream
        .request(request, RequestOptions::from_context(completion.context()))
        .await
        .map_err(|e| ToolError::protocol(e.into_error_data()))?;
    match result {
        ServerResult::CompleteResult(answer) => Ok(answer.completion),
        _ => Err(ToolError::new(format!(
            "upstream '{}' answered completion/complete with another kind of result",
            upstream.name()
        ))),
    }
}
