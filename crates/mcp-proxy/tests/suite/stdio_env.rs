//! A stdio upstream's environment (issue 12, scope 3): cleared except the base set
//! (`BASE_ENV`), its `env` and its `inherit_env`. The real `ferrymcp-gateway` runs as a child with
//! secrets in its environment (its task id key, the task credentials key, another upstream's
//! bearer token); its stdio upstream, a fake MCP server that answers its own environment,
//! must see none of them.

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf};

use ferrymcp_core::{HttpConfig, Server, ToolDef, ToolError};
use ferrymcp_proxy::{CommandTarget, RequestOptions, Upstream};
use ferrymcp_types::CallToolResponse;

const SECRETS: [(&str, &str); 4] = [
    ("GATEWAY_TASK_KEY", "task-id-key-0123456789abcdef"),
    (
        "MCP_TASKS_CREDENTIALS_KEY",
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVowMTIzNDU=",
    ),
    ("API_TOKEN", "bearer-of-the-other-upstream"),
    ("DATABASE_URL", "postgres://app:hunter2@127.0.0.1/app"),
];

/// An HTTP upstream for the gateway's second entry (its bearer comes from `API_TOKEN`).
async fn http_upstream() -> SocketAddr {
    let server = Server::new("api");
    server
        .add_tool(ToolDef::new("ping", || async {
            Ok::<_, ToolError>("pong")
        }))
        .expect("ping");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let router = server
        .http_router(&HttpConfig::new())
        .expect("the default HTTP configuration is valid");
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    addr
}

fn write_config(api: SocketAddr) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrymcp-proxy-stdio-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/fake_upstream.py"
    );
    let config = format!(
        r#"
[tasks]
url = "memory://"
key_env = "GATEWAY_TASK_KEY"

[[upstream]]
namespace = "fake"
command = "python3"
args = [{script:?}]
env = {{ LISTED = "listed-value" }}
inherit_env = ["TEAM", "NOT_SET_ANYWHERE"]

[[upstream]]
namespace = "api"
url = "http://{api}/mcp"
bearer_env = "API_TOKEN"
"#
    );
    let path = dir.join("gateway.toml");
    std::fs::write(&path, config).expect("config");
    path
}

#[tokio::test]
async fn a_stdio_upstream_sees_only_the_base_env_and_what_its_config_lists() {
    let config = write_config(http_upstream().await);
    let mut gateway = CommandTarget::new(env!("CARGO_BIN_EXE_ferrymcp-gateway"))
        .arg("--config")
        .arg(config.display().to_string())
        .env("TEAM", "search")
        .env("UNLISTED_SETTING", "harmless");
    for (name, value) in SECRETS {
        gateway = gateway.env(name, value);
    }
    let gateway = Upstream::command("gateway", gateway);
    let reply = gateway
        .call_tool("fake_env", Default::default(), RequestOptions::default())
        .await
        .expect("the fake upstream answers through the gateway");
    let CallToolResponse::Complete(result) = reply else {
        panic!("{reply:?}")
    };
    let content = serde_json::to_value(&result.content).expect("content");
    let text = content[0]["text"].as_str().expect("text content");
    let env: BTreeMap<String, String> = serde_json::from_str(text).expect("an environment");

    for (name, value) in SECRETS {
        assert!(!env.contains_key(name), "{name} reached the stdio upstream");
        assert!(
            !text.contains(value),
            "the value of {name} reached the stdio upstream"
        );
    }
    assert_eq!(env.get("LISTED").map(String::as_str), Some("listed-value"));
    assert_eq!(env.get("TEAM").map(String::as_str), Some("search"));
    assert!(!env.contains_key("NOT_SET_ANYWHERE"));
    // PATH passes both hops (test -> gateway -> upstream); a Python version manager's shim
    // may put its own directories in front.
    let path = std::env::var("PATH").expect("the test has a PATH");
    assert!(
        env.get("PATH").is_some_and(|p| p.ends_with(&path)),
        "{env:?}"
    );
    // Any variable of the gateway that is neither in the base set nor listed stays behind,
    // not only the ones known to be secrets.
    assert!(!env.contains_key("UNLISTED_SETTING"), "{env:?}");
}
