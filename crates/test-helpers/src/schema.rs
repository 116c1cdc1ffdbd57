//! Validate real wire output against the official MCP JSON schemas.
//!
//! The project does not copy the schemas: they live in the shared folder beside the
//! repository (`<repo>/../shared/spec/`, see [`spec_dir`]) as
//! `mcp-2026-07-28.schema.json` ([`Spec::Mcp`]) and `ext-tasks.schema.json`
//! ([`Spec::Tasks`]). Both are JSON Schema draft 2020-12 documents whose definitions all
//! live under `$defs`.
//!
//! To validate against one definition, say `CallToolResult`, this module takes the whole
//! file, adds a root `"$ref": "#/$defs/CallToolResult"` (keeping `$schema`, `$id` and
//! `$defs`, so every local `$ref` inside still resolves) and compiles that with the
//! [`jsonschema`] crate. Files are read once per process; compiled validators are cached
//! per (file, definition), so calling [`assert_valid`] in many tests is cheap.
//!
//! `format` keywords (`uri`, `byte`, ...) are annotations only, as draft 2020-12 says by
//! default: they are not checked.
//!
//! ```no_run
//! use serde_json::json;
//! use ferrymcp_test_helpers::schema::{Spec, assert_valid};
//!
//! let tool = json!({"name": "echo", "inputSchema": {"type": "object"}});
//! assert_valid(Spec::Mcp, "Tool", &tool);
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::{Draft, Validator};
use serde_json::Value;

/// The environment variable that overrides where the schema files are looked for.
const SPEC_DIR_ENV: &str = "MCP_SPEC_DIR";

/// Which official schema file.
///
/// ```no_run
/// use ferrymcp_test_helpers::schema::{Spec, validate};
///
/// let task = serde_json::json!({
///     "taskId": "t1", "status": "working", "ttlMs": null,
///     "createdAt": "2026-08-01T00:00:00Z", "lastUpdatedAt": "2026-08-01T00:00:00Z",
/// });
/// assert_eq!(Spec::Tasks.file_name(), "ext-tasks.schema.json");
/// validate(Spec::Tasks, "DetailedTask", &task).unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Spec {
    /// The core protocol: `mcp-2026-07-28.schema.json` (`Tool`, `CallToolResult`,
    /// `ListToolsResult`, `JSONRPCErrorResponse`, `DiscoverResult`, ...).
    Mcp,
    /// The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663):
    /// `ext-tasks.schema.json` (`CreateTaskResult`, `GetTaskResult`, `DetailedTask`, ...).
    Tasks,
}

impl Spec {
    /// The schema's file name inside [`spec_dir`].
    ///
    /// ```
    /// use ferrymcp_test_helpers::schema::Spec;
    ///
    /// assert_eq!(Spec::Mcp.file_name(), "mcp-2026-07-28.schema.json");
    /// ```
    pub fn file_name(self) -> &'static str {
        match self {
            Spec::Mcp => "mcp-2026-07-28.schema.json",
            Spec::Tasks => "ext-tasks.schema.json",
        }
    }

    /// The process-wide slot holding this file's parsed contents (or why it could not be
    /// loaded; a missing file stays missing for the whole test run).
    fn document_slot(self) -> &'static OnceLock<Result<Arc<Value>, SchemaError>> {
        static MCP: OnceLock<Result<Arc<Value>, SchemaError>> = OnceLock::new();
        static TASKS: OnceLock<Result<Arc<Value>, SchemaError>> = OnceLock::new();
        match self {
            Spec::Mcp => &MCP,
            Spec::Tasks => &TASKS,
        }
    }
}

/// Why a value could not be validated, or why it is invalid.
///
/// ```no_run
/// use ferrymcp_test_helpers::schema::{SchemaError, Spec, validate};
///
/// let not_a_tool = serde_json::json!({"name": "echo"});
/// match validate(Spec::Mcp, "Tool", &not_a_tool) {
///     Err(SchemaError::Invalid { definition, errors }) => {
///         assert_eq!(definition, "Tool");
///         assert!(errors.iter().any(|e| e.contains("inputSchema")));
///     }
///     other => panic!("expected Invalid, got {other:?}"),
/// }
/// ```
#[derive(Debug, Clone, thiserror::Error)]
pub enum SchemaError {
    /// The schema file could not be read.
    #[error(
        "cannot read schema file {}: {reason} (looked in {}; set {SPEC_DIR_ENV} to the directory \
         holding mcp-2026-07-28.schema.json and ext-tasks.schema.json to override)",
        path.display(),
        path.parent().unwrap_or(Path::new("")).display()
    )]
    Missing {
        /// The full path that was tried.
        path: PathBuf,
        /// The I/O error, as text.
        reason: String,
    },
    /// The schema file is not JSON, or it (with the root `$ref` added) does not compile as a
    /// JSON schema.
    #[error("cannot use schema file {}: {message}", path.display())]
    Parse {
        /// The schema file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The schema file has no such definition under `$defs`.
    #[error("the schema has no definition `{0}` under $defs")]
    UnknownDefinition(String),
    /// The instance does not match the definition.
    #[error("instance is not a valid `{definition}`:\n  {}", errors.join("\n  "))]
    Invalid {
        /// The definition validated against, e.g. `CallToolResult`.
        definition: String,
        /// One line per error: `at <instance path>: <message> (schema: <keyword path>)`.
        errors: Vec<String>,
    },
}

/// Where the schema files are.
///
/// The environment variable `MCP_SPEC_DIR` wins if set and not empty (a relative path is
/// taken relative to the test process's working directory, which `cargo test` sets to the
/// directory of the crate under test). Otherwise: walk up from this crate's
/// `CARGO_MANIFEST_DIR` (as compiled in) to the first directory holding a `Cargo.lock` or a
/// `Cargo.toml` with a `[workspace]` table (the workspace root), and take
/// `../shared/spec` from there, which is where the project's shared folder sits both on
/// developer machines and in CI.
///
/// ```
/// let dir = ferrymcp_test_helpers::schema::spec_dir();
/// if std::env::var_os("MCP_SPEC_DIR").is_none() {
///     assert!(dir.ends_with("shared/spec"));
/// }
/// ```
pub fn spec_dir() -> PathBuf {
    match std::env::var_os(SPEC_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => spec_dir_from(Path::new(env!("CARGO_MANIFEST_DIR"))),
    }
}

/// `../shared/spec` from the workspace root at or above `start`; if no root is found,
/// `../shared/spec` from `start` itself (the error for the missing file then says where).
fn spec_dir_from(start: &Path) -> PathBuf {
    let root = start
        .ancestors()
        .find(|dir| is_workspace_root(dir))
        .unwrap_or(start);
    root.join("..").join("shared").join("spec")
}

fn is_workspace_root(dir: &Path) -> bool {
    if dir.join("Cargo.lock").is_file() {
        return true;
    }
    std::fs::read_to_string(dir.join("Cargo.toml"))
        .map(|manifest| manifest.lines().any(|line| line.trim() == "[workspace]"))
        .unwrap_or(false)
}

/// Validates `instance` against `#/$defs/<definition>` of the `spec` file.
///
/// The file is read and parsed once per process, and the compiled validator is cached per
/// (spec, definition). Returns [`SchemaError::Invalid`] listing every error with its
/// instance path.
///
/// ```no_run
/// use serde_json::json;
/// use ferrymcp_test_helpers::schema::{Spec, validate};
///
/// let result = json!({"resultType": "complete", "content": [{"type": "text", "text": "hi"}]});
/// validate(Spec::Mcp, "CallToolResult", &result).unwrap();
/// assert!(validate(Spec::Mcp, "CallToolResult", &json!({"content": "hi"})).is_err());
/// ```
pub fn validate(spec: Spec, definition: &str, instance: &Value) -> Result<(), SchemaError> {
    let validator = validator(spec, definition)?;
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|error| {
            let at = error.instance_path.as_str();
            let at = if at.is_empty() { "/" } else { at };
            format!("at {at}: {error} (schema: {})", error.schema_path)
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(SchemaError::Invalid {
            definition: definition.to_owned(),
            errors,
        })
    }
}

/// Like [`validate`], but panics with a readable report: the schema file, the definition,
/// every error with its instance path, and the instance pretty-printed. For use in tests.
///
/// ```no_run
/// use serde_json::json;
/// use ferrymcp_test_helpers::schema::{Spec, assert_valid};
///
/// assert_valid(Spec::Mcp, "JSONRPCErrorResponse", &json!({
///     "jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"},
/// }));
/// ```
#[track_caller]
pub fn assert_valid(spec: Spec, definition: &str, instance: &Value) {
    if let Err(error) = validate(spec, definition, instance) {
        panic!("{}", report(spec, definition, instance, &error));
    }
}

/// Asserts that `value` is a valid `CallToolResult` of the 2026-07-28 schema.
///
/// That schema requires `resultType`, but the 2025-11-25 wire (the legacy era) has no such
/// field, and a client treats its absence as `"complete"`. With `legacy = true`, a result
/// lacking `resultType` is therefore checked as a copy with `"resultType": "complete"`
/// inserted, so everything else (content blocks, `isError`, `structuredContent`, `_meta`)
/// is still validated against the 2026 schema. With `legacy = false` the value is
/// validated as it is, so a missing `resultType` fails.
///
/// ```no_run
/// use serde_json::json;
/// use ferrymcp_test_helpers::schema::assert_valid_call_tool_result;
///
/// // What a 2025-11-25 session puts on the wire:
/// assert_valid_call_tool_result(&json!({"content": [{"type": "text", "text": "hi"}]}), true);
/// // What a 2026-07-28 session puts on the wire:
/// assert_valid_call_tool_result(
///     &json!({"resultType": "complete", "content": [{"type": "text", "text": "hi"}]}),
///     false,
/// );
/// ```
#[track_caller]
pub fn assert_valid_call_tool_result(value: &Value, legacy: bool) {
    match value {
        Value::Object(fields) if legacy && !fields.contains_key("resultType") => {
            let mut with_result_type = fields.clone();
            with_result_type.insert("resultType".to_owned(), Value::from("complete"));
            assert_valid(
                Spec::Mcp,
                "CallToolResult",
                &Value::Object(with_result_type),
            );
        }
        _ => assert_valid(Spec::Mcp, "CallToolResult", value),
    }
}

/// The panic message of [`assert_valid`].
fn report(spec: Spec, definition: &str, instance: &Value, error: &SchemaError) -> String {
    let mut out = format!(
        "schema validation failed: `{definition}` of {}\n",
        spec.file_name()
    );
    match error {
        SchemaError::Invalid { errors, .. } => {
            let _ = writeln!(out, "{} error(s):", errors.len());
            for line in errors {
                let _ = writeln!(out, "  - {line}");
            }
        }
        other => {
            let _ = writeln!(out, "{other}");
        }
    }
    let pretty = serde_json::to_string_pretty(instance).unwrap_or_else(|_| instance.to_string());
    let _ = write!(out, "instance:\n{pretty}");
    out
}

/// The parsed schema file, read once per process.
fn document(spec: Spec) -> Result<Arc<Value>, SchemaError> {
    spec.document_slot()
        .get_or_init(|| load(&spec_dir().join(spec.file_name())).map(Arc::new))
        .clone()
}

fn load(path: &Path) -> Result<Value, SchemaError> {
    let text = std::fs::read_to_string(path).map_err(|error| SchemaError::Missing {
        path: path.to_owned(),
        reason: error.to_string(),
    })?;
    serde_json::from_str(&text).map_err(|error| SchemaError::Parse {
        path: path.to_owned(),
        message: error.to_string(),
    })
}

/// The compiled validator for one definition, built on first use and cached.
fn validator(spec: Spec, definition: &str) -> Result<Arc<Validator>, SchemaError> {
    type Cache = Mutex<HashMap<(Spec, String), Arc<Validator>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();

    let key = (spec, definition.to_owned());
    let cache = CACHE.get_or_init(Cache::default);
    // A test that panicked while holding the lock cannot have left a half-built entry.
    if let Some(found) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(Arc::clone(found));
    }

    let document = document(spec)?;
    let mut schema = match &*document {
        Value::Object(root) => root.clone(),
        _ => {
            return Err(SchemaError::Parse {
                path: spec_dir().join(spec.file_name()),
                message: "the document is not a JSON object".to_owned(),
            });
        }
    };
    let known = schema
        .get("$defs")
        .and_then(Value::as_object)
        .is_some_and(|defs| defs.contains_key(definition));
    if !known {
        return Err(SchemaError::UnknownDefinition(definition.to_owned()));
    }
    schema.insert(
        "$ref".to_owned(),
        Value::from(format!("#/$defs/{}", escape_pointer_token(definition))),
    );
    // The lock is not held while compiling, so tests validating different definitions do
    // not wait for each other. Two threads may compile the same definition at once; the
    // first to insert wins and both get that one.
    let compiled = jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(&Value::Object(schema))
        .map_err(|error| SchemaError::Parse {
            path: spec_dir().join(spec.file_name()),
            message: format!("compiling `#/$defs/{definition}`: {error}"),
        })?;
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    Ok(Arc::clone(cache.entry(key).or_insert(Arc::new(compiled))))
}

/// Escapes a `$defs` key for use in a JSON pointer (RFC 6901).
fn escape_pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assert_invalid(spec: Spec, definition: &str, instance: &Value) -> Vec<String> {
        match validate(spec, definition, instance) {
            Err(SchemaError::Invalid {
                definition: d,
                errors,
            }) => {
                assert_eq!(d, definition);
                assert!(!errors.is_empty());
                errors
            }
            other => panic!("expected `{definition}` to reject {instance}, got {other:?}"),
        }
    }

    fn text_content() -> Value {
        json!([{"type": "text", "text": "hello"}])
    }

    fn tool() -> Value {
        json!({
            "name": "echo",
            "title": "Echo",
            "description": "Echoes its input.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"]
            },
            "annotations": {"readOnlyHint": true}
        })
    }

    fn task_times() -> (&'static str, &'static str) {
        ("2026-08-01T12:00:00Z", "2026-08-01T12:00:05Z")
    }

    // --- locating the files ---

    #[test]
    fn spec_dir_holds_both_schema_files() {
        let dir = spec_dir();
        for spec in [Spec::Mcp, Spec::Tasks] {
            let file = dir.join(spec.file_name());
            assert!(file.is_file(), "{} does not exist", file.display());
        }
    }

    #[test]
    fn spec_dir_walks_up_to_the_workspace_root_and_takes_shared_spec_beside_it() {
        let base = std::env::temp_dir().join(format!("schema-rs-walk-{}", std::process::id()));
        let crate_dir = base.join("repo").join("crates").join("member");
        std::fs::create_dir_all(&crate_dir).unwrap();
        std::fs::write(
            crate_dir.join("Cargo.toml"),
            "[package]\nname = \"member\"\n",
        )
        .unwrap();
        std::fs::write(
            base.join("repo").join("Cargo.toml"),
            "[package]\nname = \"root\"\n\n[workspace]\nmembers = [\"crates/*\"]\n",
        )
        .unwrap();

        let found = spec_dir_from(&crate_dir);
        let expected = base.join("repo").join("..").join("shared").join("spec");
        std::fs::remove_dir_all(&base).unwrap();
        assert_eq!(found, expected);
    }

    #[test]
    fn spec_dir_treats_a_directory_with_cargo_lock_as_the_workspace_root() {
        let base = std::env::temp_dir().join(format!("schema-rs-lock-{}", std::process::id()));
        let crate_dir = base.join("repo").join("crates").join("member");
        std::fs::create_dir_all(&crate_dir).unwrap();
        std::fs::write(base.join("repo").join("Cargo.lock"), "version = 4\n").unwrap();

        let found = spec_dir_from(&crate_dir);
        std::fs::remove_dir_all(&base).unwrap();
        assert_eq!(
            found,
            base.join("repo").join("..").join("shared").join("spec")
        );
    }

    #[test]
    fn missing_file_error_says_where_it_looked_and_names_the_override() {
        let error = load(Path::new("/nonexistent/spec/mcp-2026-07-28.schema.json")).unwrap_err();
        assert!(matches!(error, SchemaError::Missing { .. }));
        let message = error.to_string();
        assert!(message.contains("/nonexistent/spec"), "{message}");
        assert!(message.contains("MCP_SPEC_DIR"), "{message}");
    }

    #[test]
    fn unknown_definition_is_reported_as_such() {
        let error = validate(Spec::Mcp, "NoSuchThing", &json!({})).unwrap_err();
        assert!(
            matches!(&error, SchemaError::UnknownDefinition(name) if name == "NoSuchThing"),
            "{error:?}"
        );
        // A definition of the other file is unknown in this one.
        let error = validate(Spec::Mcp, "CreateTaskResult", &json!({})).unwrap_err();
        assert!(
            matches!(error, SchemaError::UnknownDefinition(_)),
            "{error:?}"
        );
    }

    // --- mcp-2026-07-28: Tool, ListToolsResult ---

    #[test]
    fn tool_with_name_and_object_input_schema_is_valid() {
        assert_valid(Spec::Mcp, "Tool", &tool());
        assert_valid(
            Spec::Mcp,
            "Tool",
            &json!({"name": "t", "inputSchema": {"type": "object"}}),
        );
    }

    #[test]
    fn tool_with_unknown_extra_fields_such_as_execution_is_valid() {
        // The 2026 `Tool` does not list `execution` but does not forbid extra fields either.
        let mut tool = tool();
        tool["execution"] = json!({"taskSupport": "optional"});
        assert_valid(Spec::Mcp, "Tool", &tool);
    }

    #[test]
    fn tool_without_input_schema_is_invalid() {
        let mut tool = tool();
        tool.as_object_mut().unwrap().remove("inputSchema");
        let errors = assert_invalid(Spec::Mcp, "Tool", &tool);
        assert!(
            errors.iter().any(|e| e.contains("inputSchema")),
            "{errors:?}"
        );
    }

    #[test]
    fn tool_whose_input_schema_type_is_not_object_is_invalid() {
        let mut tool = tool();
        tool["inputSchema"]["type"] = json!("string");
        let errors = assert_invalid(Spec::Mcp, "Tool", &tool);
        assert!(
            errors.iter().any(|e| e.contains("/inputSchema/type")),
            "{errors:?}"
        );
    }

    #[test]
    fn list_tools_result_with_cache_fields_is_valid() {
        assert_valid(
            Spec::Mcp,
            "ListToolsResult",
            &json!({
                "resultType": "complete",
                "tools": [tool()],
                "cacheScope": "public",
                "ttlMs": 60000,
                "nextCursor": "page-2"
            }),
        );
    }

    #[test]
    fn list_tools_result_with_an_invalid_tool_reports_its_path() {
        let errors = assert_invalid(
            Spec::Mcp,
            "ListToolsResult",
            &json!({
                "resultType": "complete",
                "tools": [tool(), {"name": "broken"}],
                "cacheScope": "public",
                "ttlMs": 0
            }),
        );
        assert!(
            errors.iter().any(|e| e.starts_with("at /tools/1")),
            "{errors:?}"
        );
    }

    #[test]
    fn list_tools_result_without_cache_scope_and_ttl_is_invalid() {
        // The 2026 schema requires cacheScope and ttlMs; 2025-11-25 had neither.
        let errors = assert_invalid(
            Spec::Mcp,
            "ListToolsResult",
            &json!({"resultType": "complete", "tools": [tool()]}),
        );
        assert!(
            errors.iter().any(|e| e.contains("cacheScope")),
            "{errors:?}"
        );
        assert!(errors.iter().any(|e| e.contains("ttlMs")), "{errors:?}");
    }

    // --- mcp-2026-07-28: CallToolResult ---

    #[test]
    fn call_tool_result_with_result_type_and_content_array_is_valid() {
        assert_valid(
            Spec::Mcp,
            "CallToolResult",
            &json!({
                "resultType": "complete",
                "content": text_content(),
                "structuredContent": {"echo": "hello"},
                "isError": false
            }),
        );
    }

    #[test]
    fn call_tool_result_requires_result_type_in_the_2026_schema() {
        let errors = assert_invalid(
            Spec::Mcp,
            "CallToolResult",
            &json!({"content": text_content()}),
        );
        assert!(
            errors.iter().any(|e| e.contains("resultType")),
            "{errors:?}"
        );
    }

    #[test]
    fn call_tool_result_with_content_not_an_array_is_invalid() {
        let errors = assert_invalid(
            Spec::Mcp,
            "CallToolResult",
            &json!({"resultType": "complete", "content": "hello"}),
        );
        assert!(
            errors.iter().any(|e| e.starts_with("at /content")),
            "{errors:?}"
        );
    }

    #[test]
    fn call_tool_result_with_unknown_content_block_type_is_invalid() {
        assert_invalid(
            Spec::Mcp,
            "CallToolResult",
            &json!({"resultType": "complete", "content": [{"type": "video", "url": "x"}]}),
        );
    }

    #[test]
    fn legacy_call_tool_result_without_result_type_passes_the_legacy_assertion() {
        assert_valid_call_tool_result(&json!({"content": text_content(), "isError": true}), true);
    }

    #[test]
    fn current_call_tool_result_passes_the_non_legacy_assertion() {
        assert_valid_call_tool_result(
            &json!({"resultType": "complete", "content": text_content()}),
            false,
        );
    }

    #[test]
    #[should_panic(expected = "resultType")]
    fn call_tool_result_without_result_type_fails_the_non_legacy_assertion() {
        assert_valid_call_tool_result(&json!({"content": text_content()}), false);
    }

    #[test]
    #[should_panic(expected = "/content")]
    fn legacy_call_tool_result_with_content_not_an_array_still_fails() {
        assert_valid_call_tool_result(&json!({"content": {"type": "text"}}), true);
    }

    // --- mcp-2026-07-28: JSONRPCErrorResponse, DiscoverResult ---

    #[test]
    fn jsonrpc_error_response_with_code_and_message_is_valid() {
        assert_valid(
            Spec::Mcp,
            "JSONRPCErrorResponse",
            &json!({
                "jsonrpc": "2.0",
                "id": "req-1",
                "error": {"code": -32602, "message": "Invalid params", "data": {"field": "x"}}
            }),
        );
    }

    #[test]
    fn jsonrpc_error_response_with_string_code_or_wrong_version_is_invalid() {
        let errors = assert_invalid(
            Spec::Mcp,
            "JSONRPCErrorResponse",
            &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": "oops", "message": "m"}}),
        );
        assert!(
            errors.iter().any(|e| e.starts_with("at /error/code")),
            "{errors:?}"
        );
        assert_invalid(
            Spec::Mcp,
            "JSONRPCErrorResponse",
            &json!({"jsonrpc": "1.0", "id": 1, "error": {"code": -1, "message": "m"}}),
        );
    }

    #[test]
    fn discover_result_with_capabilities_and_versions_is_valid() {
        assert_valid(
            Spec::Mcp,
            "DiscoverResult",
            &json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28", "2025-11-25"],
                "capabilities": {
                    "tools": {"listChanged": true},
                    "extensions": {"io.modelcontextprotocol/tasks": {}}
                },
                "cacheScope": "public",
                "ttlMs": 0,
                "_meta": {
                    "io.modelcontextprotocol/serverInfo": {"name": "demo", "version": "0.1.0"}
                }
            }),
        );
    }

    #[test]
    fn discover_result_without_supported_versions_is_invalid() {
        let errors = assert_invalid(
            Spec::Mcp,
            "DiscoverResult",
            &json!({
                "resultType": "complete",
                "capabilities": {},
                "cacheScope": "private",
                "ttlMs": 0
            }),
        );
        assert!(
            errors.iter().any(|e| e.contains("supportedVersions")),
            "{errors:?}"
        );
    }

    // --- ext-tasks: CreateTaskResult, GetTaskResult, DetailedTask ---

    #[test]
    fn create_task_result_with_result_type_task_is_valid() {
        let (created, updated) = task_times();
        assert_valid(
            Spec::Tasks,
            "CreateTaskResult",
            &json!({
                "resultType": "task",
                "taskId": "task-1",
                "status": "working",
                "createdAt": created,
                "lastUpdatedAt": updated,
                "ttlMs": 60000,
                "pollIntervalMs": 500
            }),
        );
    }

    #[test]
    fn create_task_result_with_result_type_complete_is_invalid() {
        let (created, updated) = task_times();
        let errors = assert_invalid(
            Spec::Tasks,
            "CreateTaskResult",
            &json!({
                "resultType": "complete",
                "taskId": "task-1",
                "status": "working",
                "createdAt": created,
                "lastUpdatedAt": updated,
                "ttlMs": null
            }),
        );
        assert!(
            errors.iter().any(|e| e.starts_with("at /resultType")),
            "{errors:?}"
        );
    }

    #[test]
    fn get_task_result_of_a_completed_task_with_result_is_valid() {
        let (created, updated) = task_times();
        assert_valid(
            Spec::Tasks,
            "GetTaskResult",
            &json!({
                "resultType": "complete",
                "taskId": "task-1",
                "status": "completed",
                "createdAt": created,
                "lastUpdatedAt": updated,
                "ttlMs": null,
                "result": {"content": [{"type": "text", "text": "done"}], "isError": false}
            }),
        );
    }

    #[test]
    fn get_task_result_of_a_completed_task_without_result_is_invalid() {
        let (created, updated) = task_times();
        assert_invalid(
            Spec::Tasks,
            "GetTaskResult",
            &json!({
                "resultType": "complete",
                "taskId": "task-1",
                "status": "completed",
                "createdAt": created,
                "lastUpdatedAt": updated,
                "ttlMs": null
            }),
        );
    }

    #[test]
    fn detailed_task_that_failed_with_an_error_is_valid() {
        let (created, updated) = task_times();
        assert_valid(
            Spec::Tasks,
            "DetailedTask",
            &json!({
                "taskId": "task-1",
                "status": "failed",
                "statusMessage": "upstream timed out",
                "createdAt": created,
                "lastUpdatedAt": updated,
                "ttlMs": 1000,
                "error": {"code": -32603, "message": "Internal error"}
            }),
        );
    }

    #[test]
    fn detailed_task_with_unknown_status_or_missing_ttl_is_invalid() {
        let (created, updated) = task_times();
        assert_invalid(
            Spec::Tasks,
            "DetailedTask",
            &json!({
                "taskId": "task-1",
                "status": "paused",
                "createdAt": created,
                "lastUpdatedAt": updated,
                "ttlMs": null
            }),
        );
        assert_invalid(
            Spec::Tasks,
            "DetailedTask",
            &json!({
                "taskId": "task-1",
                "status": "working",
                "createdAt": created,
                "lastUpdatedAt": updated
            }),
        );
    }

    // --- the panic report ---

    #[test]
    fn assert_valid_panic_names_definition_error_paths_and_the_instance() {
        let instance = json!({"resultType": "complete", "content": 42, "marker": "find-me"});
        let panic = std::panic::catch_unwind(|| {
            assert_valid(Spec::Mcp, "CallToolResult", &instance);
        })
        .expect_err("an invalid instance must panic");
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains("`CallToolResult`"), "{message}");
        assert!(message.contains("mcp-2026-07-28.schema.json"), "{message}");
        assert!(message.contains("at /content"), "{message}");
        assert!(message.contains("\"marker\": \"find-me\""), "{message}");
    }

    #[test]
    fn validators_are_cached_per_spec_and_definition() {
        let first = validator(Spec::Mcp, "Tool").unwrap();
        let second = validator(Spec::Mcp, "Tool").unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        let other = validator(Spec::Tasks, "Tool").unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
    }
}
