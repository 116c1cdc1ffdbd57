//! Shared by the end-to-end suites: locating and launching the demo binary.

use std::path::PathBuf;

use tokio::io::{AsyncBufReadExt, BufReader};

/// `target/<profile>/examples/demo`, which `cargo test` builds before running tests.
pub fn demo_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lives in target/<profile>/deps");
    let binary = profile_dir
        .join("examples")
        .join(format!("demo{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} is missing: run the suite with `cargo test` (which builds examples) or `cargo build --example demo` first",
        binary.display()
    );
    binary
}

/// The demo serving Streamable HTTP on a free port, and its URL (read from its stderr).
pub struct DemoHttp {
    pub url: String,
    _child: tokio::process::Child,
}

pub async fn spawn_demo_http() -> DemoHttp {
    let mut child = tokio::process::Command::new(demo_binary())
        .args(["--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the demo");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next_line()
            .await
            .expect("read the demo's stderr")
            .expect("the demo exited before printing its URL");
        if let Some(url) = line.strip_prefix("listening on ") {
            break url.trim().to_owned();
        }
    };
    // Keep draining stderr so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    DemoHttp { url, _child: child }
}
