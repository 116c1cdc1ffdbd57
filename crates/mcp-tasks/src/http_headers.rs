//! The HTTP header a task request needs, taken from its body when a client leaves it out.

/// FastMCP's Python client (4.1) sends `Mcp-Method` but no `Mcp-Name` on `tasks/get`,
/// `tasks/update` and `tasks/cancel`, which rmcp refuses (`-32020`), so no task of an
/// ferrymcp server could be polled from it over HTTP. The header only repeats
/// `params.taskId` for routing, so a missing one is taken from the body; a header that is
/// present and disagrees with the body is still refused.
///
/// ```
/// let mut headers = http::HeaderMap::new();
/// headers.insert("mcp-method", http::HeaderValue::from_static("tasks/get"));
/// ferrymcp_tasks::http_headers::fill_missing_task_name(&mut headers, br#"{"params":{"taskId":"t1"}}"#);
/// assert_eq!(headers["mcp-name"], "t1");
/// ```
pub fn fill_missing_task_name(headers: &mut http::HeaderMap, body: &[u8]) {
    const NAME: &str = "mcp-name";
    #[derive(serde::Deserialize)]
    struct TaskRequest {
        params: TaskParams,
    }
    #[derive(serde::Deserialize)]
    struct TaskParams {
        #[serde(rename = "taskId")]
        task_id: Option<String>,
    }
    let is_task_method = headers
        .get("mcp-method")
        .and_then(|method| method.to_str().ok())
        .is_some_and(|method| crate::extension::METHODS.contains(&method));
    if !is_task_method || headers.contains_key(NAME) {
        return;
    }
    let Ok(TaskRequest {
        params: TaskParams {
            task_id: Some(task_id),
        },
    }) = serde_json::from_slice::<TaskRequest>(body)
    else {
        return;
    };
    // A task id that is not a plain header value is left to rmcp's own refusal.
    if let Ok(value) = http::HeaderValue::from_str(&task_id) {
        headers.insert(NAME, value);
    }
}

#[cfg(test)]
mod tests {
    use super::fill_missing_task_name;

    fn headers(method: &str) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        headers.insert("mcp-method", http::HeaderValue::from_str(method).unwrap());
        headers
    }

    #[test]
    fn a_missing_name_on_a_task_request_is_taken_from_the_body() {
        let mut got = headers("tasks/get");
        fill_missing_task_name(&mut got, br#"{"params": {"taskId": "t-1"}}"#);
        assert_eq!(got.get("mcp-name").unwrap(), "t-1");
    }

    #[test]
    fn a_present_name_and_other_methods_are_left_alone() {
        let mut present = headers("tasks/cancel");
        present.insert("mcp-name", http::HeaderValue::from_static("other"));
        fill_missing_task_name(&mut present, br#"{"params": {"taskId": "t-1"}}"#);
        assert_eq!(present.get("mcp-name").unwrap(), "other");

        let mut call = headers("tools/call");
        fill_missing_task_name(&mut call, br#"{"params": {"taskId": "t-1"}}"#);
        assert!(call.get("mcp-name").is_none());

        let mut garbage = headers("tasks/get");
        fill_missing_task_name(&mut garbage, b"not json");
        assert!(garbage.get("mcp-name").is_none());
    }
}
