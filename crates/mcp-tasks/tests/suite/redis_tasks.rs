//! What the Redis suites submit: a plain `echo` task of one caller, kept an hour, run once.
//! A suite changes what it needs with struct update syntax.

use std::time::Duration;

use ferrymcp_tasks::backend::{NewTask, Owner};

/// A new anonymous `echo` task of `caller`, with no arguments, kept an hour, one attempt.
pub fn echo_task(caller: &str) -> NewTask {
    NewTask {
        id: ferrymcp_tasks::new_task_id(),
        owner: Owner::of(None),
        caller: caller.to_owned(),
        tool: "echo".to_owned(),
        version: None,
        arguments: serde_json::Map::new(),
        context: serde_json::Map::new(),
        ttl: Some(Duration::from_secs(3600)),
        poll_interval: Duration::from_millis(500),
        max_attempts: 1,
    }
}
