//! Submissions in doubt: a submit whose answer never came back (Redis timed out, the
//! connection broke, the caller stopped waiting) may or may not have stored its task, and
//! its client was told it failed. Each is remembered here until the sweep
//! ([`TaskBackend::expire`](super::TaskBackend::expire)) undoes it with `lua/discard.lua`:
//! a task that never ran is deleted, and an id no task holds is taken for a while, so the
//! submission cannot arrive late and run work nobody is waiting for. Doubts live in this
//! process only: a server that dies before its sweep undoes them leaves their tasks to the
//! hold's fallback, which runs them.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{sync::Notify, time::Instant};

/// How many submissions in doubt one backend remembers before it refuses new ones (plus
/// those already on their way, which the in-flight limits bound). Past that, submissions
/// are refused before they are sent (Redis has not answered thousands of them: it is
/// unreachable), so none is ever sent without a way to undo it.
pub(super) const MAX_DOUBTS: usize = 65_536;

/// How long a submission in doubt is tried to be undone when its task has no TTL (one
/// with a TTL is tried for as long as the task could live).
pub(super) const PATIENCE: Duration = Duration::from_secs(3600);

/// The submissions in doubt, each with when to stop trying to undo it.
#[derive(Default)]
pub(super) struct Doubts {
    ids: Mutex<HashMap<String, Instant>>,
    /// Woken when one is added, so the sweep undoes it at once.
    sweeper: Arc<Notify>,
}

impl Doubts {
    /// What the sweeper waits on besides its timer.
    pub(super) fn sweeper(&self) -> Arc<Notify> {
        Arc::clone(&self.sweeper)
    }

    /// Whether another submission may be sent (fewer than [`MAX_DOUBTS`] are in doubt).
    pub(super) fn has_room(&self) -> bool {
        lock(&self.ids).len() < MAX_DOUBTS
    }

    /// Watches the submission of `id` from now until [`Watch::settled`]: dropped before
    /// that, it is in doubt until `until`.
    pub(super) fn watch<'a>(&'a self, id: &'a str, until: Instant) -> Watch<'a> {
        Watch {
            doubts: self,
            id,
            until,
            settled: false,
        }
    }

    /// Up to `max` submissions in doubt, without those given up on (past their time).
    pub(super) fn take(&self, max: usize) -> Vec<String> {
        let now = Instant::now();
        let mut ids = lock(&self.ids);
        let before = ids.len();
        ids.retain(|_, until| *until > now);
        if ids.len() < before {
            tracing::warn!(
                count = before - ids.len(),
                "gave up undoing submissions whose answer was lost, past the time their tasks could live"
            );
        }
        ids.keys().take(max).cloned().collect()
    }

    /// Forgets `ids`: they are undone (or found to stand).
    pub(super) fn settle(&self, ids: &[String]) {
        let mut doubts = lock(&self.ids);
        for id in ids {
            doubts.remove(id);
        }
    }

    fn add(&self, id: &str, until: Instant) {
        lock(&self.ids).insert(id.to_owned(), until);
        self.sweeper.notify_one();
    }
}

/// One submission on its way: in doubt when dropped unsettled.
pub(super) struct Watch<'a> {
    doubts: &'a Doubts,
    id: &'a str,
    until: Instant,
    settled: bool,
}

impl Watch<'_> {
    /// The submission's outcome is known (stored or refused): nothing to undo.
    pub(super) fn settled(mut self) {
        self.settled = true;
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.doubts.add(self.id, self.until);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unsettled_watch_leaves_its_submission_in_doubt() {
        let doubts = Doubts::default();
        let until = Instant::now() + Duration::from_secs(60);
        doubts.watch("settled", until).settled();
        drop(doubts.watch("lost", until));
        assert_eq!(doubts.take(10), vec!["lost".to_owned()]);
        doubts.settle(&["lost".to_owned()]);
        assert!(doubts.take(10).is_empty());
    }

    #[test]
    fn a_doubt_past_its_time_is_given_up() {
        let doubts = Doubts::default();
        drop(doubts.watch("old", Instant::now()));
        assert!(doubts.take(10).is_empty());
        assert!(doubts.has_room());
    }
}
