//! What the `ferrymcp-gateway` binary refuses in an upstream's credentials: passing the caller's
//! token through (AU5), and secrets written into the config file (AU22). Each case runs the
//! binary and reads why it stopped.

use std::time::Duration;

/// Runs `ferrymcp-gateway` on `config` with `env`; it must exit unsuccessfully. Returns its
/// stderr.
async fn refused(name: &str, config: &str, env: &[(&str, &str)]) -> String {
    let child = crate::gateway_process::spawn("gateway-auth", name, config, env);
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the gateway stopped within 60 s")
        .expect("its output");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{name}: it started: {stderr}");
    assert!(!stderr.contains("listening on"), "{name}: {stderr}");
    stderr
}

/// Runs `ferrymcp-gateway` on `config` with `env` until it logs a line containing `until`,
/// then stops it. Returns its stderr up to there.
async fn logs_until(name: &str, config: &str, env: &[(&str, &str)], until: &str) -> String {
    use tokio::io::{AsyncBufReadExt as _, BufReader};
    let mut child = crate::gateway_process::spawn("gateway-auth", name, config, env);
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut seen = String::new();
    let read = async {
        while let Some(line) = lines.next_line().await.expect("read stderr") {
            seen.push_str(&line);
            seen.push('\n');
            if line.contains(until) {
                return true;
            }
        }
        false
    };
    let found = tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .unwrap_or(false);
    let _ = child.start_kill();
    assert!(found, "{name}: no line with {until:?} within 60 s: {seen}");
    seen
}

const URL_ENTRY: &str = "[[upstream]]\nnamespace = \"api\"\nurl = \"http://127.0.0.1:9/mcp\"\n";

#[tokio::test]
async fn au5_forward_authorization_in_the_gateway_config_is_refused() {
    for value in ["true", "false"] {
        let stderr = refused(
            &format!("forward-{value}"),
            &format!("{URL_ENTRY}forward_authorization = {value}\n"),
            &[],
        )
        .await;
        assert!(stderr.contains("forward_authorization"), "{stderr}");
        assert!(stderr.contains("token_exchange"), "{stderr}");
    }
    let stderr = refused(
        "forward-header",
        &format!("{URL_ENTRY}forward_headers = [\"Authorization\"]\n"),
        &[],
    )
    .await;
    assert!(stderr.contains("never forwarded"), "{stderr}");
}

#[tokio::test]
async fn au22_a_secret_written_in_the_config_is_refused_and_never_shown() {
    let cases = [
        (
            "inline-client-secret",
            "[upstream.auth]\ntype = \"client_credentials\"\ntoken_url = \"http://127.0.0.1:9/token\"\nclient_id = \"gw\"\nclient_secret = \"hunter2-inline\"\n",
            "client_secret_env",
        ),
        (
            "inline-token",
            "[upstream.auth]\ntype = \"bearer\"\ntoken = \"hunter2-inline\"\n",
            "token_env",
        ),
    ];
    for (name, auth, hint) in cases {
        let stderr = refused(name, &format!("{URL_ENTRY}{auth}"), &[]).await;
        assert!(stderr.contains(hint), "{name}: {stderr}");
        assert!(!stderr.contains("hunter2-inline"), "{name}: {stderr}");
    }
    // A secret named by a variable that is not set: the variable is named.
    let stderr = refused(
        "unset-secret",
        &format!(
            "{URL_ENTRY}[upstream.auth]\ntype = \"token_exchange\"\ntoken_url = \"http://127.0.0.1:9/token\"\nclient_id = \"gw\"\nclient_secret_env = \"MCP_TEST_UNSET_SECRET\"\n"
        ),
        &[],
    )
    .await;
    assert!(stderr.contains("MCP_TEST_UNSET_SECRET"), "{stderr}");
}

/// An upstream URL may carry its credential: a password, or a token in its query (a hosted
/// server's `?api_key=`). The gateway that cannot reach it names it in its logs (rmcp's
/// included, at every level) and in its error with those redacted, and so does the error
/// of a config that does not parse.
#[tokio::test]
async fn au22_the_secrets_of_an_upstream_url_never_show_in_the_gateway_logs() {
    let config = "[[upstream]]\nnamespace = \"api\"\n\
                  url = \"http://svc:hunter2@127.0.0.1:9/mcp?region=eu&api_key=k3y-5ecret\"\n";
    // The gateway serves without the unreachable upstream and tries it again: its logs up to
    // the second failed attempt.
    let stderr = logs_until(
        "url-secrets",
        config,
        &[("RUST_LOG", "trace")],
        "upstream still unreachable",
    )
    .await;
    assert!(stderr.contains("api_key=***"), "{stderr}");
    assert!(stderr.contains("region=eu"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(!stderr.contains("5ecret"), "{stderr}");
    // A config that does not parse is quoted at the line at fault, that URL's too.
    let config = "[[upstream]]\nnamespace = \"api\"\n\
                  url = \"http://svc:hunter2@127.0.0.1:9/mcp?api_key=k3y-5ecret\" extra\n";
    let stderr = refused("url-secrets-unparsed", config, &[]).await;
    assert!(stderr.contains("api_key=***"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(!stderr.contains("5ecret"), "{stderr}");
}
