//! Group commit: calls of one script made while earlier calls of it are on their way to
//! Redis wait and go together, as one `EVALSHA` whose items the script runs in order
//! (`lua/batch.lua`). The call that finds Redis free yields once before it sends, so the
//! calls of tasks woken with it (the replies of one batch wake a whole wave of callers) go
//! in its batch instead of behind it; a call still alone after that goes from the caller's
//! own task. A quiet server pays one yield; under load, many calls share one round trip and
//! one script start.

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

/// How many calls one batch takes at most. Small enough that a wave of callers goes as
/// several batches, so the client reads one batch's replies while Redis runs the next.
pub(super) const MAX_ITEMS: usize = 16;

/// How many argument bytes one batch takes at most (a larger call goes alone).
pub(super) const MAX_BYTES: usize = 1 << 20;

/// How many batches of one script may be on their way at once.
const IN_FLIGHT: usize = 4;

/// What a script's call is sent with: the queue's key (it routes the call under Redis
/// Cluster) and its prefix (every script's first argument).
#[derive(Clone)]
pub(super) struct Target {
    pub(super) conn: Shared,
    pub(super) key: String,
    pub(super) prefix: String,
}

impl Target {
    /// Runs `script` once with these items, each its own arguments, after the arguments
    /// every item shares (`shared`, sent once); one reply per item.
    pub(super) async fn run_items(
        &self,
        script: &Script,
        shared: &[String],
        calls: &[Vec<String>],
    ) -> Result<Vec<Result<Value, BackendError>>, BackendError> {
        // Sized up front: a batch's arguments are copied into the command once.
        let count = 6 + shared.len() + calls.iter().map(|args| args.len() + 1).sum::<usize>();
        let bytes = self.key.len()
            + self.prefix.len()
            + 64
            + size(shared)
            + calls.iter().map(|args| size(args) + 4).sum::<usize>();
        let mut command = self.command_with_capacity(script, count, bytes);
        command.arg(shared.len());
        for arg in shared {
            command.arg(arg.as_str());
        }
        for args in calls {
            command.arg(args.len());
            for arg in args {
                command.arg(arg.as_str());
            }
        }
        let reply = self.invoke(script, &command).await?;
        split(reply, calls.len())
    }

    /// Runs a script built for one call alone (no batch driver) with `args`.
    pub(super) async fn run_alone(
        &self,
        script: &Script,
        args: &[&str],
    ) -> Result<Value, BackendError> {
        let mut command = self.command(script);
        for arg in args {
            command.arg(*arg);
        }
        self.invoke(script, &command).await
    }

    /// An `EVALSHA` of `script` naming the queue's ready set as its key (under Redis Cluster
    /// that routes it to the node of the queue's slot, where all its keys live) and the
    /// prefix. Built as one command, whose arguments share one buffer.
    fn command(&self, script: &Script) -> redis::Cmd {
        self.command_with_capacity(script, 0, 0)
    }

    /// [`Self::command`], its buffers sized for `count` arguments of `bytes` bytes in all.
    fn command_with_capacity(&self, script: &Script, count: usize, bytes: usize) -> redis::Cmd {
        let mut command = redis::Cmd::with_capacity(count, bytes);
        command
            .arg("EVALSHA")
            .arg(script.get_hash())
            .arg(1)
            .arg(&self.key)
            .arg(&self.prefix);
        command
    }

    /// Sends `command`; when Redis lost the script (a restart, `SCRIPT FLUSH`), loads it and
    /// sends the command again.
    async fn invoke(&self, script: &Script, command: &redis::Cmd) -> Result<Value, BackendError> {
        let mut conn = self.conn.clone();
        match command.query_async::<Value>(&mut conn).await {
            Err(error)
                if error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
            {
                script.load_async(&mut conn).await.map_err(unavailable)?;
                command.query_async(&mut conn).await.map_err(unavailable)
            }
            other => other.map_err(unavailable),
        }
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

/// The calls waiting for a batch, how many batches are on their way, and whether a call
/// is gathering the next one (calls made meanwhile join it).
#[derive(Default)]
struct State {
    in_flight: usize,
    gathering: bool,
    waiting: VecDeque<Call>,
}

struct Group {
    script: Script,
    target: Target,
    /// The arguments every call of this group shares, sent once per batch.
    shared: Vec<String>,
    state: Mutex<State>,
}

/// The group commit of one script. A call made while fewer than four batches are on their
/// way and no other call gathers one leads the next batch: it yields once, then sends
/// itself with every call that waits by then. Other calls wait and go in the next batch.
/// Waiting calls are bounded by the callers' own limits (each is a request or a run in
/// progress).
pub(super) struct Batcher {
    shared: Arc<Group>,
}

impl Batcher {
    /// The group commit of `script`, sent to `target`, each batch with the arguments all
    /// its calls share (`shared`: what is the same for every call of this backend).
    pub(super) fn new(script: Script, target: Target, shared: Vec<String>) -> Self {
        Self {
            shared: Arc::new(Group {
                script,
                target,
                shared,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Runs the script for one call's arguments (the prefix is added), in a batch with
    /// whatever other calls are made at about the same time.
    pub(super) async fn call(&self, args: Vec<String>) -> Result<Value, BackendError> {
        let queued = {
            let mut state = lock(&self.shared.state);
            if state.in_flight >= IN_FLIGHT || state.gathering {
                // Queued under the same lock that saw the slots taken, so the batch that
                // frees one is sure to find it.
                let (reply, answer) = oneshot::channel();
                state.waiting.push_back(Call { args, reply });
                Err(answer)
            } else {
                state.in_flight += 1;
                state.gathering = true;
                Ok(args)
            }
        };
        let args = match queued {
            Ok(args) => args,
            Err(answer) => return answered(answer).await,
        };
        // Ends this slot even if the caller stops waiting (its future is dropped): the
        // calls that joined meanwhile then go from a task of their own. Declared first, so
        // a dropped gathering ends before the slot sends what waits.
        let slot = Slot(Arc::clone(&self.shared));
        let mut gathering = Gathering(Some(&self.shared));
        tokio::task::yield_now().await;
        let own_bytes = size(&args);
        let joined = {
            let mut state = lock(&self.shared.state);
            state.gathering = false;
            gathering.0 = None;
            take_batch(&mut state.waiting, 1, own_bytes)
        };
        if joined.is_empty() {
            // Alone: sent from this task, so nobody else depends on this future.
            let calls = [args];
            let mut replies = self
                .shared
                .target
                .run_items(&self.shared.script, &self.shared.shared, &calls)
                .await?;
            drop(slot);
            return replies.pop().unwrap_or_else(|| {
                Err(BackendError::Corrupt(
                    "a script answered nothing".to_owned(),
                ))
            });
        }
        // Others' calls ride in this batch: it goes from a task of its own, so it is sent
        // and answered whether or not this caller still waits.
        let (reply, answer) = oneshot::channel();
        let mut batch = Vec::with_capacity(joined.len() + 1);
        batch.push(Call { args, reply });
        batch.extend(joined);
        tokio::spawn(send(batch, slot));
        answered(answer).await
    }
}

/// Ends a gathering whose caller stopped waiting before it took its batch.
struct Gathering<'a>(Option<&'a Group>);

impl Drop for Gathering<'_> {
    fn drop(&mut self) {
        if let Some(group) = self.0 {
            lock(&group.state).gathering = false;
        }
    }
}

/// The reply a batch sent for one call.
async fn answered(
    answer: oneshot::Receiver<Result<Value, BackendError>>,
) -> Result<Value, BackendError> {
    answer
        .await
        .map_err(|_| BackendError::Unavailable("the Redis backend is shutting down".to_owned()))?
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
            let batch = take_batch(&mut state.waiting, 0, 0);
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

/// The longest run of waiting calls that fits, with a batch already holding `count` calls
/// of `bytes` argument bytes, within [`MAX_ITEMS`] and [`MAX_BYTES`] (an empty batch takes
/// at least one call when any still waits), leaving out calls nobody waits for; the rest
/// stays for the next batch.
fn take_batch(waiting: &mut VecDeque<Call>, mut count: usize, mut bytes: usize) -> Vec<Call> {
    let mut batch = Vec::new();
    while let Some(call) = waiting.front() {
        // A caller that stopped waiting (its request ended, its try timed out) is not sent:
        // nobody would learn what its call did.
        if call.reply.is_closed() {
            waiting.pop_front();
            continue;
        }
        let size = size(&call.args);
        if count >= MAX_ITEMS || (count > 0 && bytes + size > MAX_BYTES) {
            break;
        }
        count += 1;
        bytes += size;
        if let Some(call) = waiting.pop_front() {
            batch.push(call);
        }
    }
    batch
}

/// A call's argument bytes.
fn size(args: &[String]) -> usize {
    args.iter().map(String::len).sum()
}

async fn send(batch: Vec<Call>, slot: Slot) {
    let (args, replies): (Vec<_>, Vec<_>) = batch.into_iter().map(|c| (c.args, c.reply)).unzip();
    let shared = Arc::clone(&slot.0);
    match shared
        .target
        .run_items(&shared.script, &shared.shared, &args)
        .await
    {
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
