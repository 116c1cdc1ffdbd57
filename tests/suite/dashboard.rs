//! Issue 18's dashboard in a real browser: Debian's Chromium, headless, loads `/admin` of
//! `demo --http --admin` with runs in flight and a failed task, and the page must show what
//! the engine holds (runs, the worker, the failure by tool). A screenshot goes to the
//! artifacts folder (`FERRYMCP_ARTIFACTS`, else `target/artifacts`). Chromium is required:
//! `.ci/setup` installs it; without it this test fails, it never skips.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::{
    common,
    operator_admin::{api_until, client, submit, terminal},
};

/// Debian's Chromium (`CHROMIUM` names another).
fn chromium() -> PathBuf {
    let path = std::env::var_os("CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.exists(),
        "{} is missing: the dashboard is tested in a real browser (bash .ci/setup installs \
         Debian's chromium)",
        path.display()
    );
    path
}

fn artifacts() -> PathBuf {
    let dir = std::env::var_os("FERRYMCP_ARTIFACTS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/artifacts"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir).expect("the artifacts folder");
    dir
}

/// Runs headless Chromium on `url` with `extra` flags (a fresh profile, nothing fetched but
/// the page), letting the page's script run for a few seconds of virtual time.
async fn browse(url: &str, extra: &[&str]) -> std::process::Output {
    let profile = std::env::temp_dir().join(format!(
        "ferrymcp-chromium-{}-{}",
        std::process::id(),
        ferrymcp::tasks::new_task_id()
    ));
    let output = tokio::process::Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1280,1100",
            "--virtual-time-budget=4000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .kill_on_drop(true)
        .output()
        .await
        .expect("run chromium");
    let _ = std::fs::remove_dir_all(&profile);
    output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue18_the_dashboard_shows_the_engine_in_chromium() {
    // A result over 40 bytes fails its task: a failure to show, from a real run.
    let demo =
        common::spawn_demo_http_with(&["--admin"], &[("MCP_TASKS_MAX_RESULT_BYTES", "40")]).await;
    let admin = demo.url.replace("/mcp", "/admin");
    let client = client(&demo.url).await;
    let failed = submit(&client, "parent_tool", json!({"value": 7})).await;
    assert!(matches!(
        terminal(&client, &failed).await,
        ferrymcp::types::TaskPayload::Failed { .. }
    ));
    let held = [
        submit(&client, "sleep_task", json!({"seconds": 30})).await,
        submit(&client, "sleep_task", json!({"seconds": 30})).await,
    ];
    api_until(&admin, "status", |status| {
        status["tasks"]["running"] == 2 && status["workers"][0]["running"] == 2
    })
    .await;
    // Two samples at least, so the chart has a line.
    api_until(&admin, "history", |samples| {
        samples.as_array().is_some_and(|samples| samples.len() >= 2)
    })
    .await;

    let page = browse(&admin, &["--dump-dom"]).await;
    let dom = String::from_utf8_lossy(&page.stdout);
    assert!(
        dom.contains(r#"data-loaded="true""#),
        "the page's script never read the engine: {dom}\n{}",
        String::from_utf8_lossy(&page.stderr)
    );
    for shown in [
        r#"id="running">2<"#,
        r#"id="queued">0<"#,
        r#"data-stale="false""#,
        r#"data-tool="parent_tool" data-failed="1""#,
        "2 / 10",
    ] {
        assert!(
            dom.contains(shown),
            "the dashboard does not show {shown}: {dom}"
        );
    }
    assert!(dom.contains(r#"<span id="conn" class="">live"#), "{dom}");

    let shot = artifacts().join("dashboard.png");
    let _ = std::fs::remove_file(&shot);
    let taken = browse(&admin, &[&format!("--screenshot={}", shot.display())]).await;
    let size = std::fs::metadata(&shot).map_or(0, |meta| meta.len());
    assert!(
        size > 10_000,
        "no screenshot at {} ({size} bytes): {}",
        shot.display(),
        String::from_utf8_lossy(&taken.stderr)
    );
    for id in &held {
        let _ = common::run_operator_cli(&admin, &["cancel", id]).await;
    }
}
