//! Rate-limited warnings about refused requests and connections: a flood of bad requests
//! makes one line per kind and window, with a count of the ones not logged.

use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

/// What was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Host,
    Origin,
    Connections,
    InFlight,
    Sessions,
    BodyTooLarge,
    BodyTimeout,
    HeaderTimeout,
    Auth,
}

impl Kind {
    const ALL: [Kind; 9] = [
        Kind::Host,
        Kind::Origin,
        Kind::Connections,
        Kind::InFlight,
        Kind::Sessions,
        Kind::BodyTooLarge,
        Kind::BodyTimeout,
        Kind::HeaderTimeout,
        Kind::Auth,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Host => "host",
            Kind::Origin => "origin",
            Kind::Connections => "max_connections",
            Kind::InFlight => "max_in_flight",
            Kind::Sessions => "max_sessions",
            Kind::BodyTooLarge => "max_body_bytes",
            Kind::BodyTimeout => "body_timeout",
            Kind::HeaderTimeout => "header_timeout",
            Kind::Auth => "auth",
        }
    }
}

/// At most one warning per [`Kind`] every `window`.
#[derive(Debug)]
pub(super) struct RejectLog {
    window: Duration,
    last: [Mutex<Window>; Kind::ALL.len()],
}

#[derive(Debug, Default)]
struct Window {
    logged_at: Option<Instant>,
    suppressed: u64,
}

impl Default for RejectLog {
    fn default() -> Self {
        Self {
            window: Duration::from_secs(10),
            last: Default::default(),
        }
    }
}

impl RejectLog {
    /// Records a refusal (counted in `mcp_http_rejections_total` by its limit); logs it if
    /// none of its kind was logged in the current window.
    pub(super) fn refused(&self, kind: Kind, detail: &dyn std::fmt::Display) {
        crate::metrics::rejected(kind.name());
        let index = Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        let suppressed = {
            let Ok(mut window) = self.last[index].lock() else {
                return;
            };
            let now = Instant::now();
            if window
                .logged_at
                .is_some_and(|at| now.duration_since(at) < self.window)
            {
                window.suppressed += 1;
                return;
            }
            window.logged_at = Some(now);
            std::mem::take(&mut window.suppressed)
        };
        tracing::warn!(
            limit = kind.name(),
            suppressed,
            "refused: {detail} ({suppressed} more of this kind not logged in the last {}s)",
            self.window.as_secs()
        );
    }
}
