//! Fixtures shared by the in-process tree suites (`mounting.rs`, `versions.rs`): argument
//! types, and registration and mounting that fail the test with the server's name.

use std::sync::{Mutex, PoisonError};

use ferrymcp::{MountOptions, Server, ToolDef, ToolInfo, version::Version};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Pair {
    pub a: i64,
    pub b: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct X {
    pub x: i64,
}

pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub fn add(server: &Server, def: ToolDef) {
    let name = def.name().to_owned();
    if let Err(e) = server.add_tool(def) {
        panic!("registering {name:?} on {:?} failed: {e}", server.name());
    }
}

pub fn mount(parent: &Server, child: &Server, options: impl Into<MountOptions>) {
    if let Err(e) = parent.mount(child, options) {
        panic!(
            "mounting {:?} into {:?} failed: {e}",
            child.name(),
            parent.name()
        );
    }
}

pub fn v(raw: &str) -> Version {
    Version::new(raw).unwrap_or_else(|e| panic!("{raw:?} should be a valid version: {e}"))
}

pub async fn listed(server: &Server) -> Vec<ToolInfo> {
    match server.list_tools().await {
        Ok(tools) => tools,
        Err(e) => panic!("list_tools on {:?} failed: {}", server.name(), e.message),
    }
}
