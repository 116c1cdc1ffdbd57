//! What the `ferrymcp-gateway` binary says at start (issue 12, scope 3): without `key_env`, a
//! warning that passthrough task ids will not survive a restart or work across replicas.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, BufReader};

/// The gateway's stderr lines up to its `listening on` line.
async fn start_lines(config: &str, env: &[(&str, &str)]) -> Vec<String> {
    let mut child =
        crate::gateway_process::spawn("gateway-start", &env.len().to_string(), config, env);
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut lines = Vec::new();
    let read = async {
        while let Some(line) = stderr.next_line().await.expect("stderr") {
            let done = line.contains("listening on");
            lines.push(line);
            if done {
                return;
            }
        }
        panic!("the gateway exited before listening: {lines:#?}");
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the gateway started within 60 s");
    lines
}

fn warns_about_task_ids(lines: &[String]) -> bool {
    lines.iter().any(|line| {
        line.contains("WARN")
            && line.contains("will not survive a restart")
            && line.contains("replicas")
    })
}

#[tokio::test]
async fn without_key_env_the_gateway_warns_that_task_ids_are_per_process() {
    let lines = start_lines("[tasks]\nurl = \"memory://\"\n", &[]).await;
    assert!(warns_about_task_ids(&lines), "{lines:#?}");
    // No `[tasks]` section at all: passthrough is still on, so the same warning.
    let lines = start_lines("", &[]).await;
    assert!(warns_about_task_ids(&lines), "{lines:#?}");
}

#[tokio::test]
async fn with_key_env_the_gateway_starts_without_that_warning() {
    let config = "[tasks]\nurl = \"memory://\"\nkey_env = \"GATEWAY_TASK_KEY\"\n";
    let lines = start_lines(config, &[("GATEWAY_TASK_KEY", "0123456789abcdef0123")]).await;
    assert!(!warns_about_task_ids(&lines), "{lines:#?}");
}
