//! Group commit: calls of one script made while earlier calls of it are on their way to
//! Redis wait and go together, as one `EVALSHA` whose items the script runs in order
//! (`lua/batch.lua`). One call alone goes at once, from the caller's task, so a quiet
//! server pays nothing for it; under load, many calls share one round trip and one script
//! start.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use redis::{Script, Value};
use tokio::sync::oneshot;

use super::{
    BackendError,
    connection::Shared,
    reply::{items, text, uint},
    unavailable,
};

/// How many calls one batch takes at most.
pub(super) const MAX_ITEMS: usize = 64;

/// How many argument bytes one batch takes at most (a larger call goes alone).
pub(super) const MAX_BYTES: usize = 1 << 20;

/// How many batches of one script may be on their way at once.
const IN_FLIGHT: usize = 2;

/// What a script's call is sent with: the queue's key (it routes the call under Redis
/// Cluster) and its prefix (every script's first argument).
#[derive(Clone)]
pub(super) struct Target {
    pub(super) conn: Shared,
    pub(super) key: String,
    pub(super) prefix: String,
}

impl Target {
    /// Runs `script` once with these items, each its own arguments; one reply per item.
    pub(super) async fn run_items(
        &self,
        script: &Script,
        calls: &[Vec<String>],
    ) -> Result<Vec<Result<Value, BackendError>>, BackendError> {
        let mut invocation = self.invocation(script);
        for args in calls {
            invocation.arg(args.len());
            for arg in args {
                invocation.arg(arg.as_str());
            }
        }
        let reply = self.invoke(&invocation).await?;
        split(reply, calls.len())
    }

    /// Runs a script built for one call alone (no batch driver) with `args`.
    pub(super) async fn run_alone(
        &self,
        script: &Script,
        args: &[&str],
    ) -> Result<Value, BackendError> {
        let mut invocation = self.invocation(script);
        for arg in args {
            invocation.arg(*arg);
        }
        self.invoke(&invocation).await
    }

    /// A call of `script` naming the queue's ready set as its key (under Redis Cluster that
    /// routes it to the node of the queue's slot, where all its keys live) and the prefix.
    fn invocation<'a>(&self, script: &'a Script) -> redis::ScriptInvocation<'a> {
        let mut invocation = script.prepare_invoke();
        invocation.key(&self.key).arg(&self.prefix);
        invocation
    }

    async fn invoke(
        &self,
        invocation: &redis::ScriptInvocation<'_>,
    ) -> Result<Value, BackendError> {
        let mut conn = self.conn.clone();
        invocation
            .invoke_async::<Value>(&mut conn)
            .await
            .map_err(unavailable)
    }
}

/// The reply of each item of a batch: `{replies, errors}` (see `lua/batch.lua`).
fn split(reply: Value, count: usize) -> Result<Vec<Result<Value, BackendError>>, BackendError> {
    let mut parts = items(reply, "a batch")?.into_iter();
    let (Some(replies), Some(errors)) = (parts.next(), parts.next()) else {
        return Err(BackendError::Corrupt("a batch reply".to_owned()));
    };
    let mut out: Vec<Result<Value, BackendError>> =
        items(replies, "a batch")?.into_iter().map(Ok).collect();
    if out.len() != count {
        return Err(BackendError::Corrupt(format!(
            "a batch of {count} calls answered {} replies",
            out.len()
        )));
    }
    let errors = items(errors, "a batch")?;
    for pair in errors.chunks(2) {
        let (Some(index), Some(message)) =
            (pair.first().and_then(uint), pair.get(1).and_then(text))
        else {
            return Err(BackendError::Corrupt("a batch error".to_owned()));
        };
        let slot = usize::try_from(index)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| out.get_mut(i))
            .ok_or_else(|| BackendError::Corrupt("a batch error's item".to_owned()))?;
        *slot = Err(BackendError::Unavailable(format!(
            "script error: {message}"
        )));
    }
    Ok(out)
}

struct Call {
    args: Vec<String>,
    reply: oneshot::Sender<Result<Value, BackendError>>,
}

/// The calls waiting for a batch, and how many batches are on their way.
#[derive(Default)]
struct State {
    in_flight: usize,
    waiting: VecDeque<Call>,
}

struct Group {
    script: Script,
    target: Target,
    state: Mutex<State>,
}

/// The group commit of one script. A call made while fewer than two batches are on their
/// way and none waits runs at once, in the caller's task; others wait and go together in
/// the next batch. Waiting calls are bounded by the callers' own limits (each is a request
/// or a run in progress).
pub(super) struct Batcher {
    shared: Arc<Group>,
}

impl Batcher {
    /// The group commit of `script`, sent to `target`.
    pub(super) fn new(script: Script, target: Target) -> Self {
        Self {
            shared: Arc::new(Group {
                script,
                target,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Runs the script for one call's arguments (the prefix is added): at once when Redis
    /// is not busy with this script, else in a batch with whatever other calls wait.
    pub(super) async fn call(&self, mut args: Vec<String>) -> Result<Value, BackendError> {
        let answer = {
            let mut state = lock(&self.shared.state);
            if state.in_flight < IN_FLIGHT && state.waiting.is_empty() {
                state.in_flight += 1;
                None
            } else {
                let (reply, answer) = oneshot::channel();
                let args = std::mem::take(&mut args);
                state.waiting.push_back(Call { args, reply });
                Some(answer)
            }
        };
        match answer {
            None => {
                // Ends this slot even if the caller stops waiting (its future is dropped).
                let _slot = Slot(Arc::clone(&self.shared));
                let calls = [args];
                let mut replies = self
                    .shared
                    .target
                    .run_items(&self.shared.script, &calls)
                    .await?;
                replies.pop().unwrap_or_else(|| {
                    Err(BackendError::Corrupt(
                        "a script answered nothing".to_owned(),
                    ))
                })
            }
            Some(answer) => answer.await.map_err(|_| {
                BackendError::Unavailable("the Redis backend is shutting down".to_owned())
            })?,
        }
    }
}

fn lock(mutex: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A batch on its way: when it ends, the calls that waited meanwhile go as the next batch
/// (in a task of their own), or the slot is free again.
struct Slot(Arc<Group>);

impl Drop for Slot {
    fn drop(&mut self) {
        let batch = {
            let mut state = lock(&self.0.state);
            let batch = take_batch(&mut state.waiting);
            if batch.is_empty() {
                state.in_flight -= 1;
                return;
            }
            batch
        };
        let shared = Arc::clone(&self.0);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(send(batch, Slot(shared)));
            }
            // No runtime left to send them on: the waiting calls learn it from their
            // dropped replies.
            Err(_) => drop(batch),
        }
    }
}

/// The longest run of waiting calls within [`MAX_ITEMS`] and [`MAX_BYTES`] (at least one
/// call when any still waits), leaving out calls nobody waits for; the rest stays for the
/// next batch.
fn take_batch(waiting: &mut VecDeque<Call>) -> Vec<Call> {
    let mut bytes = 0;
    let mut batch = Vec::new();
    while let Some(call) = waiting.front() {
        // A caller that stopped waiting (its request ended, its try timed out) is not sent:
        // nobody would learn what its call did.
        if call.reply.is_closed() {
            waiting.pop_front();
            continue;
        }
        let size: usize = call.args.iter().map(String::len).sum();
        if batch.len() >= MAX_ITEMS || (!batch.is_empty() && bytes + size > MAX_BYTES) {
            break;
        }
        bytes += size;
        if let Some(call) = waiting.pop_front() {
            batch.push(call);
        }
    }
    batch
}

async fn send(batch: Vec<Call>, slot: Slot) {
    let (args, replies): (Vec<_>, Vec<_>) = batch.into_iter().map(|c| (c.args, c.reply)).unzip();
    let shared = Arc::clone(&slot.0);
    match shared.target.run_items(&shared.script, &args).await {
        Ok(answers) => {
            for (reply, answer) in replies.into_iter().zip(answers) {
                let _ = reply.send(answer);
            }
        }
        Err(error) => {
            for reply in replies {
                let _ = reply.send(Err(copy(&error)));
            }
        }
    }
    drop(slot);
}

/// The same error for every call of a failed batch.
fn copy(error: &BackendError) -> BackendError {
    match error {
        BackendError::Unavailable(message) => BackendError::Unavailable(message.clone()),
        BackendError::Corrupt(message) => BackendError::Corrupt(message.clone()),
        BackendError::Limit(refusal) => BackendError::Limit(*refusal),
    }
}
