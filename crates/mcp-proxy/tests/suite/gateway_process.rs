//! The `ferrymcp-gateway` binary as a process for the gateway suites.

use std::process::Stdio;

/// Writes `config` to a file named after `suite` and `name`, and starts `ferrymcp-gateway` on
/// it (HTTP on a free port, `RUST_LOG` unset unless `env` sets it, stderr piped; killed when
/// dropped).
pub fn spawn(suite: &str, name: &str, config: &str, env: &[(&str, &str)]) -> tokio::process::Child {
    let dir = std::env::temp_dir().join(format!("ferrymcp-{suite}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, config).expect("config");
    tokio::process::Command::new(env!("CARGO_BIN_EXE_ferrymcp-gateway"))
        .arg("--config")
        .arg(&path)
        .args(["--http", "127.0.0.1:0"])
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn ferrymcp-gateway")
}
