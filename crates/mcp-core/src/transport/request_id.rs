//! Which ids an error answer may carry back.

use serde_json::Value;

/// Whether `id`, read from a message that failed to parse as a request, can be echoed in
/// the error answering it: a string or an integer, the ids MCP allows. Anything else
/// (`1.5`, `1e30`, an integer too large to read exactly, `true`) is answered with no id,
/// as for a message whose id could not be read.
pub(crate) fn echoable(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::echoable;

    #[test]
    fn strings_and_integers_are_echoed_and_nothing_else() {
        for id in [json!("a"), json!(0), json!(-7), json!(u64::MAX)] {
            assert!(echoable(&id), "{id}");
        }
        for id in [
            json!(1.5),
            json!(1e30),
            json!(null),
            json!(true),
            json!([1]),
        ] {
            assert!(!echoable(&id), "{id}");
        }
    }
}
