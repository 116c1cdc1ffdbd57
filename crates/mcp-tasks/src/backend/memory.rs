//! [`MemoryBackend`]: the embedded, single-process task store (the default, `memory://`).
//!
//! One mutex guards the state and is never held across an `.await`. Expiry and lease
//! deadlines sit in binary heaps (lazy deletion), so no operation scans the stored tasks:
//! the cost of a call does not grow with how many tasks are kept. Deadlines use tokio's
//! clock, so tests can drive TTLs and leases with a paused clock.
//!
//! Records are boxed (growing the map moves pointers, not records, while the lock is held)
//! and keep their JSON payloads serialized: a stored result costs its compact JSON size, not
//! a tree of maps (about 20× less for a small `CallToolResult`). Payloads are parsed back
//! outside the lock.
//!
//! [`TaskLimits`] are enforced with counters kept as tasks change status and expire, so a
//! refusal costs no more than an acceptance. Claims are fair across callers: each queued run
//! gets a start tag one past the larger of the queue's virtual clock and its caller's last
//! tag; a claim takes the lowest tag (ties by arrival) and moves the clock to it. A caller
//! with many queued runs thus advances its own tags, not everybody's, and another caller's
//! run waits at most one slot per busy caller.

use std::{
    cmp::Reverse,
    collections::{BTreeMap, BinaryHeap, HashMap},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use async_trait::async_trait;
use ferrymcp_types::{InputResponses, JsonObject, TaskStatus};
use serde_json::{Value, json};
use tokio::{
    sync::{Notify, broadcast, mpsc},
    time::Instant,
};

use super::{
    BackendError, CancelAck, Claimed, InputRound, LIMIT_CODE, Lease, LeaseState, Limit,
    LimitExceeded, NewTask, Owner, StoreStats, TaskBackend, TaskFilter, TaskLimits, TaskRecord,
    TaskView, UpdateAck, WorkerEvent, WorkerId, WorkerPresence, WriteAck,
};
use crate::{ids, lost_worker::LOST_WORKER_MESSAGE};

/// How long a claim is valid without a heartbeat, unless configured.
///
/// ```
/// assert_eq!(ferrymcp_tasks::backend::memory::DEFAULT_LEASE.as_secs(), 30);
/// ```
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
/// How many workers' reports are kept; the one heard from longest ago makes room.
const MAX_WORKERS_KNOWN: usize = 1024;
/// The longest the sweeper sleeps when nothing is due.
const IDLE_SWEEP: Duration = Duration::from_secs(1);

/// The embedded task store: one per server, shared by nothing else.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use ferrymcp_tasks::backend::{TaskBackend, memory::MemoryBackend, NewTask, Owner};
/// let backend = MemoryBackend::new();
/// let owner = Owner::of(None);
/// let view = backend.submit(NewTask {
///     id: ferrymcp_tasks::new_task_id(), owner: owner.clone(), caller: "anon:".into(), tool: "t".into(), version: None,
///     arguments: Default::default(), context: Default::default(),
///     ttl: Some(std::time::Duration::from_secs(60)),
///     poll_interval: std::time::Duration::from_secs(1), max_attempts: 1,
/// }).await.unwrap();
/// assert!(backend.get(&owner, &view.id).await.unwrap().is_some());
/// # });
/// ```
pub struct MemoryBackend {
    state: Mutex<State>,
    ready: Notify,
    sweeper: Arc<Notify>,
    changes: broadcast::Sender<String>,
    lease: Duration,
    limits: TaskLimits,
}

#[derive(Default)]
struct State {
    tasks: HashMap<String, Box<Record>>,
    /// Runs ready to claim, by (start tag, arrival).
    ready: BTreeMap<(u64, u64), String>,
    /// The start tag of the last run claimed.
    clock: u64,
    /// Arrivals so far (ties between equal tags go by arrival).
    arrivals: u64,
    /// Each caller's last start tag, while it is ahead of the clock.
    last_tags: HashMap<Arc<str>, u64>,
    /// `last_tags` by tag, to forget them once the clock passes (lazy deletion).
    tag_order: BinaryHeap<Reverse<(u64, Arc<str>)>>,
    /// Unfinished (working or input_required) tasks, in all and by caller.
    unfinished: u64,
    unfinished_by_caller: HashMap<Arc<str>, u64>,
    expiry: BinaryHeap<Reverse<(Instant, String)>>,
    leases: BinaryHeap<Reverse<(Instant, String, u64)>>,
    workers: HashMap<WorkerId, mpsc::UnboundedSender<WorkerEvent>>,
    /// Workers as they last reported themselves, by id.
    presence: HashMap<String, WorkerPresence>,
    /// Tasks that ended (completed, failed or cancelled) since the store began.
    ended_total: u64,
}

struct Record {
    owner: Owner,
    /// The quota and fairness key.
    caller: Arc<str>,
    tool: String,
    version: Option<String>,
    /// Compact JSON.
    arguments: Arc<str>,
    /// Compact JSON.
    context: Arc<str>,
    status: TaskStatus,
    status_message: Option<String>,
    created_at_ms: u64,
    updated_at_ms: u64,
    ttl_ms: Option<u64>,
    poll_interval_ms: u64,
    /// Compact JSON of the `CallToolResult`.
    result: Option<Arc<str>>,
    /// Compact JSON of the JSON-RPC error.
    error: Option<Arc<str>>,
    deadline: Option<Instant>,
    /// Claimable work: released, and not yet claimed for the current round.
    released: bool,
    holder: Option<(WorkerId, Instant)>,
    /// The holder's lease end as Unix milliseconds, reckoned once when the lease was given or
    /// renewed (reckoning it at every read would move it by a millisecond between reads).
    lease_until_ms: u64,
    fence: u64,
    attempt: u32,
    max_attempts: u32,
    round: u32,
    /// Outstanding requests: client key → (tool key, request).
    outstanding: BTreeMap<String, (String, Value)>,
    /// Answers collected for the next round, by the tool's keys.
    answers: InputResponses,
    request_state: Option<String>,
}

/// A duration in whole milliseconds, rounded up and at least 1: `ttlMs` and
/// `pollIntervalMs` must be positive integers.
pub(crate) fn whole_ms(duration: Duration) -> u64 {
    let ms = duration.as_nanos().div_ceil(1_000_000).max(1);
    u64::try_from(ms).unwrap_or(u64::MAX)
}

/// The time now, Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Serializes a payload for storage.
fn pack<T: serde::Serialize>(value: &T) -> Arc<str> {
    serde_json::to_string(value).map_or_else(|_| Arc::from("null"), Arc::from)
}

/// Parses a stored payload; the store only holds what [`pack`] wrote.
fn unpack(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or(Value::Null)
}

fn unpack_object(raw: &str) -> JsonObject {
    match unpack(raw) {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

/// A limit's value as a refusal reports it.
fn limit_max(max: usize) -> u64 {
    u64::try_from(max).unwrap_or(u64::MAX)
}

/// The error a task keeps instead of a result (or error) over
/// [`TaskLimits::max_result_bytes`].
pub(crate) fn result_limit_error(max: usize) -> Value {
    let refusal = LimitExceeded {
        limit: Limit::ResultBytes,
        max: limit_max(max),
    };
    json!({
        "code": LIMIT_CODE,
        "message": refusal.to_string(),
        "data": {"limit": refusal.limit.setting(), "max": refusal.max},
    })
}

impl State {
    /// Counts a new unfinished task of `caller`.
    fn started(&mut self, caller: &Arc<str>) {
        self.unfinished += 1;
        *self
            .unfinished_by_caller
            .entry(Arc::clone(caller))
            .or_default() += 1;
    }

    /// A task of `caller` ended: completed, failed or cancelled.
    fn finished(&mut self, caller: &str) {
        self.ended_total += 1;
        self.ended(caller);
    }

    /// A task of `caller` is no longer unfinished (it ended, or expired unfinished).
    fn ended(&mut self, caller: &str) {
        self.unfinished = self.unfinished.saturating_sub(1);
        if let Some(count) = self.unfinished_by_caller.get_mut(caller) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.unfinished_by_caller.remove(caller);
            }
        }
    }

    /// The limit a new task of `caller` would break, if any.
    fn refusal(&self, limits: &TaskLimits, caller: &str) -> Option<LimitExceeded> {
        let mine = self.unfinished_by_caller.get(caller).copied().unwrap_or(0);
        let kept = u64::try_from(self.tasks.len()).unwrap_or(u64::MAX);
        [
            (Limit::TasksPerCaller, mine, limits.max_tasks_per_caller),
            (Limit::Tasks, self.unfinished, limits.max_tasks),
            (Limit::Kept, kept, limits.max_kept),
        ]
        .into_iter()
        .find(|(_, count, max)| count >= max)
        .map(|(limit, _, max)| LimitExceeded { limit, max })
    }

    /// Moves the clock to a claimed run's tag and forgets the callers' last tags it passed.
    fn advance_clock(&mut self, tag: u64) {
        self.clock = self.clock.max(tag);
        while let Some(Reverse((last, _))) = self.tag_order.peek() {
            if *last > self.clock {
                break;
            }
            let Some(Reverse((last, caller))) = self.tag_order.pop() else {
                break;
            };
            if self.last_tags.get(&caller) == Some(&last) {
                self.last_tags.remove(&caller);
            }
        }
    }
}

/// A task as read under the lock: payloads still serialized (cheap to copy out).
struct RawView {
    view: TaskView,
    result: Option<Arc<str>>,
    error: Option<Arc<str>>,
}

impl RawView {
    /// Parses the payloads; call it after releasing the lock.
    fn into_view(self) -> TaskView {
        let mut view = self.view;
        view.result = self.result.as_deref().map(unpack);
        view.error = self.error.as_deref().map(unpack);
        view
    }
}

impl Record {
    fn raw_view(&self, id: &str) -> RawView {
        RawView {
            view: TaskView {
                id: id.to_owned(),
                status: self.status,
                status_message: self.status_message.clone(),
                created_at_ms: self.created_at_ms,
                updated_at_ms: self.updated_at_ms,
                ttl_ms: self.ttl_ms,
                poll_interval_ms: self.poll_interval_ms,
                result: None,
                error: None,
                input_requests: self
                    .outstanding
                    .iter()
                    .map(|(key, (_, request))| (key.clone(), request.clone()))
                    .collect(),
            },
            result: self.result.clone(),
            error: self.error.clone(),
        }
    }

    fn touch(&mut self) {
        self.updated_at_ms = now_ms().max(self.created_at_ms);
    }

    fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }

    /// Whether `lease` is the current claim.
    fn holds(&self, lease: &Lease) -> bool {
        self.fence == lease.fence
            && self
                .holder
                .as_ref()
                .is_some_and(|(worker, _)| *worker == lease.worker)
    }

    /// Ends the task in a terminal status; withdraws everything pending.
    fn finish(&mut self, status: TaskStatus) {
        self.status = status;
        self.holder = None;
        self.released = false;
        self.outstanding.clear();
        self.answers.clear();
        self.request_state = None;
        self.touch();
    }
}

impl Default for MemoryBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBackend {
    /// An empty store with a 30 s lease.
    pub fn new() -> Self {
        Self::with_lease(DEFAULT_LEASE)
    }

    /// An empty store whose claims lapse after `lease` without a heartbeat.
    ///
    /// ```
    /// let _ = ferrymcp_tasks::backend::memory::MemoryBackend::with_lease(std::time::Duration::from_secs(5));
    /// ```
    pub fn with_lease(lease: Duration) -> Self {
        Self {
            state: Mutex::new(State::default()),
            ready: Notify::new(),
            sweeper: Arc::new(Notify::new()),
            changes: broadcast::channel(1024).0,
            lease,
            limits: TaskLimits::default(),
        }
    }

    /// The same store, enforcing `limits` instead of [`TaskLimits::default`].
    ///
    /// ```
    /// use ferrymcp_tasks::backend::{TaskLimits, memory::MemoryBackend};
    /// let _ = MemoryBackend::new().with_limits(TaskLimits::default().with_max_tasks_per_caller(10));
    /// ```
    pub fn with_limits(mut self, limits: TaskLimits) -> Self {
        self.limits = limits;
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn changed(&self, id: &str) {
        // Nobody listening is fine.
        let _ = self.changes.send(id.to_owned());
    }

    /// Queues the next run of `id`, fairly across callers (see the [module docs](self)).
    fn enqueue(&self, state: &mut State, id: &str) {
        let Some(caller) = state.tasks.get(id).map(|r| Arc::clone(&r.caller)) else {
            return;
        };
        let last = state.last_tags.get(&caller).copied().unwrap_or(0);
        let tag = state.clock.max(last) + 1;
        state.last_tags.insert(Arc::clone(&caller), tag);
        state.tag_order.push(Reverse((tag, caller)));
        state.arrivals += 1;
        let arrival = state.arrivals;
        state.ready.insert((tag, arrival), id.to_owned());
        self.ready.notify_one();
    }

    fn owned<'a>(state: &'a mut State, owner: &Owner, id: &str) -> Option<&'a mut Record> {
        state
            .tasks
            .get_mut(id)
            .filter(|r| r.owner == *owner)
            .map(|r| &mut **r)
    }

    fn notify_worker(state: &State, holder: Option<&(WorkerId, Instant)>, id: &str) {
        if let Some((worker, _)) = holder
            && let Some(sender) = state.workers.get(worker)
        {
            let _ = sender.send(WorkerEvent::Cancel(id.to_owned()));
        }
    }

    /// A run of `id` lost its worker: another start if attempts are left, else `failed`.
    fn lost_worker(&self, state: &mut State, id: &str) {
        let Some(record) = state.tasks.get_mut(id) else {
            return;
        };
        record.holder = None;
        if record.attempt < record.max_attempts {
            record.released = true;
            self.enqueue(state, id);
            crate::metrics::recovered("rerun", 1);
        } else {
            crate::metrics::recovered("fail", 1);
            record.error = Some(pack(&json!({
                "code": ferrymcp_types::codes::INTERNAL_ERROR,
                "message": LOST_WORKER_MESSAGE,
            })));
            record.status_message = Some(LOST_WORKER_MESSAGE.to_owned());
            record.finish(TaskStatus::Failed);
            let caller = Arc::clone(&record.caller);
            state.finished(&caller);
        }
    }

    /// Cancels task `id`, whoever owns it: the operator's cancel and `tasks/cancel`.
    fn cancel_record(&self, mut state: MutexGuard<'_, State>, id: &str) -> CancelAck {
        let Some(record) = state.tasks.get_mut(id) else {
            return CancelAck::AlreadyTerminal;
        };
        if record.is_terminal() {
            return CancelAck::AlreadyTerminal;
        }
        let holder = record.holder.clone();
        record.finish(TaskStatus::Cancelled);
        let caller = Arc::clone(&record.caller);
        state.finished(&caller);
        Self::notify_worker(&state, holder.as_ref(), id);
        drop(state);
        self.changed(id);
        CancelAck::Cancelled
    }

    /// Task `id` as an operator sees it.
    fn record_of(id: &str, record: &Record) -> TaskRecord {
        TaskRecord {
            id: id.to_owned(),
            status: record.status,
            status_message: record.status_message.clone(),
            tool: record.tool.clone(),
            version: record.version.clone(),
            caller: record.caller.to_string(),
            created_at_ms: record.created_at_ms,
            updated_at_ms: record.updated_at_ms,
            expires_at_ms: record
                .ttl_ms
                .map(|ttl| record.created_at_ms.saturating_add(ttl)),
            attempt: record.attempt,
            max_attempts: record.max_attempts,
            round: record.round,
            worker: record
                .holder
                .as_ref()
                .map(|(worker, _)| worker.as_str().to_owned()),
            lease_until_ms: record.holder.as_ref().map(|_| record.lease_until_ms),
            queued: record.released && record.holder.is_none() && !record.is_terminal(),
            error: if record.status == TaskStatus::Failed {
                record.error.as_deref().map(unpack)
            } else {
                None
            },
        }
    }

    fn write_held<T>(
        &self,
        lease: &Lease,
        write: impl FnOnce(&mut Record) -> T,
    ) -> Result<Result<T, WriteAck>, BackendError> {
        let mut state = self.lock();
        let Some(record) = state.tasks.get_mut(&lease.task) else {
            return Ok(Err(WriteAck::Gone));
        };
        if record.is_terminal() {
            return Ok(Err(WriteAck::Terminal));
        }
        if !record.holds(lease) {
            return Ok(Err(WriteAck::Lost));
        }
        let written = write(record);
        if record.is_terminal() {
            let caller = Arc::clone(&record.caller);
            state.finished(&caller);
        }
        Ok(Ok(written))
    }

    /// Records a terminal payload (the result for `complete`, else the error for `fail`),
    /// or the result-size error instead when it is over the limit.
    fn finish_with(
        &self,
        lease: &Lease,
        payload: &Value,
        completed: bool,
    ) -> Result<WriteAck, BackendError> {
        let max = self.limits.max_result_bytes;
        let packed = pack(payload);
        let message_of = |error: &Value| {
            error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let (status, result, error, message) = if packed.len() > max {
            let error = result_limit_error(max);
            let message = message_of(&error);
            (TaskStatus::Failed, None, Some(pack(&error)), message)
        } else if completed {
            (TaskStatus::Completed, Some(packed), None, None)
        } else {
            (TaskStatus::Failed, None, Some(packed), message_of(payload))
        };
        let written = self.write_held(lease, |record| {
            if status == TaskStatus::Failed {
                record.status_message = message;
            }
            record.result = result;
            record.error = error;
            record.finish(status);
        })?;
        if written.is_ok() {
            self.changed(&lease.task);
        }
        Ok(written.map_or_else(|ack| ack, |()| WriteAck::Recorded))
    }
}

#[async_trait]
impl TaskBackend for MemoryBackend {
    async fn submit(&self, task: NewTask) -> Result<TaskView, BackendError> {
        let arguments = pack(&task.arguments);
        if arguments.len() > self.limits.max_argument_bytes {
            return Err(BackendError::Limit(LimitExceeded {
                limit: Limit::ArgumentBytes,
                max: limit_max(self.limits.max_argument_bytes),
            }));
        }
        let caller: Arc<str> = Arc::from(task.caller);
        let now = now_ms();
        let deadline = task
            .ttl
            .map(|ttl| Instant::now() + Duration::from_millis(whole_ms(ttl)));
        let record = Record {
            owner: task.owner,
            caller: Arc::clone(&caller),
            tool: task.tool,
            version: task.version,
            arguments,
            context: pack(&task.context),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            updated_at_ms: now,
            ttl_ms: task.ttl.map(whole_ms),
            poll_interval_ms: whole_ms(task.poll_interval),
            result: None,
            error: None,
            deadline,
            released: false,
            holder: None,
            lease_until_ms: 0,
            fence: 0,
            attempt: 0,
            max_attempts: task.max_attempts.max(1),
            round: 1,
            outstanding: BTreeMap::new(),
            answers: InputResponses::new(),
            request_state: None,
        };
        let view = record.raw_view(&task.id).view;
        let mut state = self.lock();
        if state.tasks.contains_key(&task.id) {
            return Err(BackendError::Corrupt(format!(
                "task id {} is already taken",
                task.id
            )));
        }
        if let Some(refusal) = state.refusal(&self.limits, &caller) {
            return Err(BackendError::Limit(refusal));
        }
        state.started(&caller);
        if let Some(deadline) = deadline {
            let earliest = state
                .expiry
                .peek()
                .is_none_or(|Reverse((first, _))| deadline < *first);
            state.expiry.push(Reverse((deadline, task.id.clone())));
            if earliest {
                self.sweeper.notify_one();
            }
        }
        state.tasks.insert(task.id, Box::new(record));
        Ok(view)
    }

    async fn release(&self, owner: &Owner, id: &str) -> Result<(), BackendError> {
        let mut state = self.lock();
        if let Some(record) = Self::owned(&mut state, owner, id)
            && !record.is_terminal()
            && !record.released
            && record.holder.is_none()
            && record.outstanding.is_empty()
        {
            record.released = true;
            self.enqueue(&mut state, id);
        }
        Ok(())
    }

    async fn get(&self, owner: &Owner, id: &str) -> Result<Option<TaskView>, BackendError> {
        let raw = {
            let mut state = self.lock();
            Self::owned(&mut state, owner, id).map(|r| r.raw_view(id))
        };
        Ok(raw.map(RawView::into_view))
    }

    async fn deliver_input(
        &self,
        owner: &Owner,
        id: &str,
        responses: InputResponses,
    ) -> Result<Option<UpdateAck>, BackendError> {
        let mut state = self.lock();
        let Some(record) = Self::owned(&mut state, owner, id) else {
            return Ok(None);
        };
        if record.status != TaskStatus::InputRequired {
            return Ok(Some(UpdateAck::Ignored));
        }
        let mut taken = false;
        for (key, answer) in responses {
            if let Some((tool_key, _)) = record.outstanding.remove(&key) {
                record.answers.insert(tool_key, answer);
                taken = true;
            }
        }
        if !taken {
            return Ok(Some(UpdateAck::Ignored));
        }
        record.touch();
        if !record.outstanding.is_empty() {
            drop(state);
            self.changed(id);
            return Ok(Some(UpdateAck::Waiting));
        }
        // Every request is answered: the next round becomes runnable, in the same critical
        // section, so a concurrent identical update finds nothing outstanding (C31, R41).
        record.status = TaskStatus::Working;
        record.status_message = None;
        record.round += 1;
        // A new round is a first attempt: lost-worker retries count per round.
        record.attempt = 0;
        record.released = true;
        self.enqueue(&mut state, id);
        drop(state);
        self.changed(id);
        Ok(Some(UpdateAck::Resumed))
    }

    async fn cancel(&self, owner: &Owner, id: &str) -> Result<Option<CancelAck>, BackendError> {
        let mut state = self.lock();
        let Some(record) = Self::owned(&mut state, owner, id) else {
            return Ok(None);
        };
        if record.is_terminal() {
            return Ok(Some(CancelAck::AlreadyTerminal));
        }
        Ok(Some(self.cancel_record(state, id)))
    }

    async fn claim(
        &self,
        worker: &WorkerId,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<Claimed>, BackendError> {
        let deadline = Instant::now() + wait;
        loop {
            let notified = self.ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let claimed = {
                let mut state = self.lock();
                let now = Instant::now();
                let lease_until = now + self.lease;
                let lease_until_ms = now_ms().saturating_add(whole_ms(self.lease));
                let mut claimed = Vec::new();
                let mut raw = Vec::new();
                while claimed.len() < max {
                    let Some(((tag, _), id)) = state.ready.pop_first() else {
                        break;
                    };
                    let Some(record) = state.tasks.get_mut(&id) else {
                        continue;
                    };
                    if !record.released || record.is_terminal() || record.holder.is_some() {
                        continue;
                    }
                    record.released = false;
                    record.fence += 1;
                    record.attempt += 1;
                    record.holder = Some((worker.clone(), lease_until));
                    record.lease_until_ms = lease_until_ms;
                    // Cloned, not taken: a run redelivered after a lost lease needs them again.
                    let responses = (record.round > 1).then(|| record.answers.clone());
                    claimed.push(Claimed {
                        lease: Lease {
                            task: id.clone(),
                            worker: worker.clone(),
                            fence: record.fence,
                        },
                        owner: record.owner.clone(),
                        tool: record.tool.clone(),
                        version: record.version.clone(),
                        arguments: JsonObject::new(),
                        context: JsonObject::new(),
                        attempt: record.attempt,
                        round: record.round,
                        responses,
                        request_state: record.request_state.clone(),
                        created_at: Some(
                            std::time::UNIX_EPOCH + Duration::from_millis(record.created_at_ms),
                        ),
                    });
                    raw.push((Arc::clone(&record.arguments), Arc::clone(&record.context)));
                    let fence = record.fence;
                    state.leases.push(Reverse((lease_until, id, fence)));
                    state.advance_clock(tag);
                }
                if !state.ready.is_empty() && claimed.len() == max {
                    // Someone else may take the rest.
                    self.ready.notify_one();
                }
                drop(state);
                for (run, (arguments, context)) in claimed.iter_mut().zip(raw) {
                    run.arguments = unpack_object(&arguments);
                    run.context = unpack_object(&context);
                }
                claimed
            };
            if !claimed.is_empty() {
                return Ok(claimed);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Ok(Vec::new());
            }
        }
    }

    async fn heartbeat(&self, leases: &[Lease]) -> Result<Vec<LeaseState>, BackendError> {
        let mut state = self.lock();
        let lease_until = Instant::now() + self.lease;
        let lease_until_ms = now_ms().saturating_add(whole_ms(self.lease));
        let mut states = Vec::with_capacity(leases.len());
        for lease in leases {
            let answer = match state.tasks.get_mut(&lease.task) {
                None => LeaseState::Gone,
                Some(record) if record.is_terminal() => {
                    if record.status == TaskStatus::Cancelled {
                        LeaseState::Held {
                            cancel_requested: true,
                        }
                    } else {
                        LeaseState::Gone
                    }
                }
                Some(record) if !record.holds(lease) => LeaseState::Lost,
                Some(record) => {
                    record.holder = Some((lease.worker.clone(), lease_until));
                    record.lease_until_ms = lease_until_ms;
                    let fence = record.fence;
                    state
                        .leases
                        .push(Reverse((lease_until, lease.task.clone(), fence)));
                    LeaseState::Held {
                        cancel_requested: false,
                    }
                }
            };
            states.push(answer);
        }
        Ok(states)
    }

    async fn complete(&self, lease: &Lease, result: &Value) -> Result<WriteAck, BackendError> {
        self.finish_with(lease, result, true)
    }

    async fn fail(&self, lease: &Lease, error: &Value) -> Result<WriteAck, BackendError> {
        self.finish_with(lease, error, false)
    }

    async fn set_status_message(
        &self,
        lease: &Lease,
        message: String,
    ) -> Result<WriteAck, BackendError> {
        let written = self.write_held(lease, |record| {
            record.status_message = Some(message);
        })?;
        if written.is_ok() {
            self.changed(&lease.task);
        }
        Ok(written.map_or_else(|ack| ack, |()| WriteAck::Recorded))
    }

    async fn request_input(
        &self,
        lease: &Lease,
        round: InputRound,
    ) -> Result<WriteAck, BackendError> {
        let written = self.write_held(lease, |record| {
            record.outstanding = round
                .requests
                .into_iter()
                .map(|(tool_key, request)| (ids::new_input_key(&lease.task), (tool_key, request)))
                .collect();
            record.request_state = round.request_state;
            record.answers.clear();
            record.holder = None;
            record.status = TaskStatus::InputRequired;
            record.touch();
        })?;
        if written.is_ok() {
            self.changed(&lease.task);
        }
        Ok(written.map_or_else(|ack| ack, |()| WriteAck::Recorded))
    }

    async fn hand_back(&self, lease: &Lease) -> Result<WriteAck, BackendError> {
        let mut state = self.lock();
        let ack = match state.tasks.get(&lease.task) {
            None => WriteAck::Gone,
            Some(record) if record.is_terminal() => WriteAck::Terminal,
            Some(record) if !record.holds(lease) => WriteAck::Lost,
            Some(_) => {
                self.lost_worker(&mut state, &lease.task);
                WriteAck::Recorded
            }
        };
        drop(state);
        if ack == WriteAck::Recorded {
            self.changed(&lease.task);
        }
        Ok(ack)
    }

    async fn expire(&self) -> Result<Duration, BackendError> {
        let now = Instant::now();
        let mut expired = Vec::new();
        let mut state = self.lock();
        while let Some(Reverse((deadline, _))) = state.expiry.peek() {
            if *deadline > now {
                break;
            }
            let Some(Reverse((deadline, id))) = state.expiry.pop() else {
                break;
            };
            if state
                .tasks
                .get(&id)
                .is_some_and(|r| r.deadline == Some(deadline))
                && let Some(record) = state.tasks.remove(&id)
            {
                if !record.is_terminal() {
                    state.ended(&record.caller);
                }
                Self::notify_worker(&state, record.holder.as_ref(), &id);
                expired.push(id);
            }
        }
        while let Some(Reverse((until, _, _))) = state.leases.peek() {
            if *until > now {
                break;
            }
            let Some(Reverse((until, id, fence))) = state.leases.pop() else {
                break;
            };
            let Some(record) = state.tasks.get_mut(&id) else {
                continue;
            };
            let lapsed = record.fence == fence
                && record
                    .holder
                    .as_ref()
                    .is_some_and(|(_, held_until)| *held_until <= until);
            if !lapsed || record.is_terminal() {
                continue;
            }
            self.lost_worker(&mut state, &id);
            expired.push(id);
        }
        let next = [
            state.expiry.peek().map(|Reverse((at, _))| *at),
            state.leases.peek().map(|Reverse((at, _, _))| *at),
        ]
        .into_iter()
        .flatten()
        .min()
        .map_or(IDLE_SWEEP, |at| {
            at.saturating_duration_since(now).min(IDLE_SWEEP)
        });
        drop(state);
        for id in &expired {
            self.changed(id);
        }
        Ok(next)
    }

    fn events(&self, worker: &WorkerId) -> Option<mpsc::UnboundedReceiver<WorkerEvent>> {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.lock().workers.insert(worker.clone(), sender);
        Some(receiver)
    }

    fn changes(&self) -> Option<broadcast::Receiver<String>> {
        Some(self.changes.subscribe())
    }

    fn lease(&self) -> Duration {
        self.lease
    }

    async fn stats(&self) -> Result<Option<StoreStats>, BackendError> {
        let state = self.lock();
        let mut stats = StoreStats::default();
        for record in state.tasks.values() {
            let count = if record.is_terminal() {
                &mut stats.finished
            } else if record.holder.is_some() {
                &mut stats.running
            } else if record.released {
                &mut stats.queued
            } else {
                &mut stats.waiting
            };
            *count += 1;
        }
        stats.ended = state.ended_total;
        Ok(Some(stats))
    }

    async fn worker_seen(&self, worker: &WorkerPresence) -> Result<(), BackendError> {
        let mut seen = worker.clone();
        seen.seen_at_ms = now_ms();
        let mut state = self.lock();
        if state.presence.len() >= MAX_WORKERS_KNOWN && !state.presence.contains_key(&seen.id) {
            // The one heard from longest ago makes room.
            if let Some(oldest) = state
                .presence
                .values()
                .min_by_key(|worker| worker.seen_at_ms)
                .map(|worker| worker.id.clone())
            {
                state.presence.remove(&oldest);
            }
        }
        state.presence.insert(seen.id.clone(), seen);
        Ok(())
    }

    async fn worker_gone(&self, worker: &WorkerId) -> Result<(), BackendError> {
        self.lock().presence.remove(worker.as_str());
        Ok(())
    }

    async fn workers(&self) -> Result<Option<(u64, Vec<WorkerPresence>)>, BackendError> {
        let mut workers: Vec<WorkerPresence> = self.lock().presence.values().cloned().collect();
        workers.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(Some((now_ms(), workers)))
    }

    async fn forget_workers(&self, unseen_for: Duration) -> Result<u64, BackendError> {
        let before = now_ms().saturating_sub(whole_ms(unseen_for));
        let mut state = self.lock();
        let known = state.presence.len();
        state
            .presence
            .retain(|_, worker| worker.seen_at_ms >= before);
        Ok(u64::try_from(known - state.presence.len()).unwrap_or(u64::MAX))
    }

    async fn records(&self, filter: &TaskFilter) -> Result<Option<Vec<TaskRecord>>, BackendError> {
        let now_ms = now_ms();
        let state = self.lock();
        let records = state
            .tasks
            .iter()
            .map(|(id, record)| Self::record_of(id, record))
            .filter(|record| filter.matches(record, now_ms))
            .collect();
        drop(state);
        Ok(Some(filter.newest(records)))
    }

    async fn record(&self, id: &str) -> Result<Option<TaskRecord>, BackendError> {
        let state = self.lock();
        Ok(state
            .tasks
            .get(id)
            .map(|record| Self::record_of(id, record)))
    }

    async fn cancel_any(&self, id: &str) -> Result<Option<CancelAck>, BackendError> {
        let state = self.lock();
        if !state.tasks.contains_key(id) {
            return Ok(None);
        }
        Ok(Some(self.cancel_record(state, id)))
    }

    fn sweeper_wakeup(&self) -> Option<Arc<Notify>> {
        Some(Arc::clone(&self.sweeper))
    }
}

#[cfg(test)]
mod tests {
    //! State transitions, races, leases and TTL are covered by the generic conformance suite
    //! (`ferrymcp_test_helpers::backend_conformance`, run in `tests/suite/memory_conformance.rs`); this only
    //! checks the memory backend's own helpers.
    use super::*;

    #[test]
    fn r19_whole_ms_is_positive_and_rounds_up() {
        assert_eq!(whole_ms(Duration::ZERO), 1);
        assert_eq!(whole_ms(Duration::from_micros(500)), 1);
        assert_eq!(whole_ms(Duration::from_micros(1500)), 2);
        assert_eq!(whole_ms(Duration::from_secs(900)), 900_000);
    }
}
