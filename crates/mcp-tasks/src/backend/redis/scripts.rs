//! The Lua scripts, one per state transition. Each is the shared prelude followed by its
//! body; `redis::Script` runs it by `EVALSHA` and loads it on `NOSCRIPT`.

use redis::Script;

const PRELUDE: &str = include_str!("lua/prelude.lua");

/// Every transition of the Redis backend.
pub(super) struct Scripts {
    pub submit: Script,
    pub release: Script,
    pub get: Script,
    pub cancel: Script,
    pub claim: Script,
    pub heartbeat: Script,
    pub write: Script,
    pub deliver: Script,
    pub recover: Script,
    pub handback: Script,
}

fn script(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}\n{body}"))
}

impl Scripts {
    pub(super) fn new() -> Self {
        Self {
            submit: script(include_str!("lua/submit.lua")),
            release: script(include_str!("lua/release.lua")),
            get: script(include_str!("lua/get.lua")),
            cancel: script(include_str!("lua/cancel.lua")),
            claim: script(include_str!("lua/claim.lua")),
            heartbeat: script(include_str!("lua/heartbeat.lua")),
            write: script(include_str!("lua/write.lua")),
            deliver: script(include_str!("lua/deliver.lua")),
            recover: script(include_str!("lua/recover.lua")),
            handback: script(include_str!("lua/handback.lua")),
        }
    }
}
