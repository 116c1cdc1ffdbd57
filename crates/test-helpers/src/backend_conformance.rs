//! A conformance suite for [`TaskBackend`] implementations: every backend (the embedded
//! [`MemoryBackend`](ferrymcp_tasks::backend::memory::MemoryBackend), a Redis backend, yours) must
//! pass the same cases, which pin down the contract of `ferrymcp_tasks::backend`: visibility on
//! submit and release, owner scoping, claims and their leases and fences, input rounds,
//! cancellation, TTLs and the races between them.
//!
//! A backend author describes the backend under test with a [`Harness`] (a fresh, empty
//! store, its lease, and whether its deadlines follow tokio's clock) and invokes
//! [`backend_conformance_tests!`](crate::backend_conformance_tests) in an integration test:
//! it generates one `#[tokio::test]` per case in a module `conformance`, so each case passes
//! or fails on its own. The caller's crate needs `tokio` with the `macros`,
//! `rt-multi-thread` and (for a paused clock) `test-util` features among its
//! dev-dependencies. Every case is also a public `async fn` taking `&Harness<B>`, to run
//! cases one by one, and [`run_all`] runs them all in one test. The cases that need time to
//! pass (leases, TTLs, claim waits) let it pass with `tokio::time::sleep`: on a paused clock
//! ([`Harness::paused_clock`], the backend's deadlines then follow tokio's clock) that jumps
//! through time at once and boundaries are checked to the millisecond; a backend with its
//! own clock (Redis' `TIME`) runs them on the real clock, in real time proportional to
//! [`Harness::lease`], so give it a short lease (300 ms, say). No case sleeps to
//! synchronise: concurrent steps are ordered with barriers, channels and polls.
//!
//! ```no_run
//! // tests/conformance.rs of a backend crate
//! use std::time::Duration;
//! use ferrymcp_test_helpers::backend_conformance::Harness;
//! # mod my_backend { pub use ferrymcp_tasks::backend::memory::MemoryBackend as RedisBackend; }
//! use my_backend::RedisBackend;
//!
//! const LEASE: Duration = Duration::from_millis(300);
//!
//! // A backend on its own clock: every case runs on tokio's real clock.
//! ferrymcp_test_helpers::backend_conformance_tests!(real_clock, || {
//!     Harness::new(RedisBackend::with_lease(LEASE), LEASE)
//! });
//!
//! // Or, for one case at a time:
//! #[tokio::test]
//! async fn claim_respects_max() {
//!     let harness = Harness::new(RedisBackend::with_lease(LEASE), LEASE);
//!     ferrymcp_test_helpers::backend_conformance::claim_respects_max(&harness).await;
//! }
//! # fn main() {}
//! ```
//!
//! Where the design notes (`docs/backend.md` §5) and the trait's documentation differ, the
//! suite follows the trait: a cancelled task is `cancelled` at once even while a worker
//! holds it (the holder learns it from its events and heartbeats), and a task past its TTL
//! becomes unknown (not `failed` first).

use std::{
    collections::{BTreeMap, BTreeSet},
    future::Future,
    panic::AssertUnwindSafe,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use ferrymcp_core::{
    auth::Principal,
    types::{InputResponses, JsonObject, TaskStatus},
};
use ferrymcp_tasks::backend::{
    BackendError, CancelAck, Claimed, InputRound, LIMIT_CODE, Lease, LeaseState, Limit,
    LimitExceeded, NewTask, Owner, TaskBackend, TaskFilter, TaskLimits, TaskView, UpdateAck,
    WorkerEvent, WorkerId, WorkerPresence, WriteAck,
};
use futures::FutureExt as _;
use serde_json::{Value, json};
use tokio::{
    sync::{Barrier, broadcast, mpsc, oneshot},
    time::{Instant, timeout},
};

/// What the suite needs to know about a backend under test.
///
/// ```
/// use std::time::Duration;
/// use ferrymcp_tasks::backend::memory::MemoryBackend;
/// use ferrymcp_test_helpers::backend_conformance::Harness;
///
/// let lease = Duration::from_secs(30);
/// let harness = Harness::new(MemoryBackend::with_lease(lease), lease).on_paused_clock();
/// assert!(harness.paused_clock && harness.peer.is_none());
/// ```
pub struct Harness<B> {
    /// A fresh, empty store (shared with the tasks some cases spawn).
    pub backend: Arc<B>,
    /// Another handle on the same store (another connection, standing in for another server
    /// process), or `None` when the store lives in one process. Cases that check cross-process
    /// visibility, cancellation and updates use it when present.
    pub peer: Option<Arc<B>>,
    /// How long the backend's claims last without a heartbeat. The clock cases derive their
    /// durations (TTLs, waits, how long to let pass) from it.
    pub lease: Duration,
    /// The backend's deadlines follow tokio's clock, and the clock cases run on a paused one
    /// (so the suite checks deadlines to the millisecond, without waiting). `false`: the
    /// backend has its own clock, and the clock cases take real time (a few leases each),
    /// with a quarter lease of tolerance.
    pub paused_clock: bool,
    /// Builds a fresh, empty store that enforces the given [`TaskLimits`] (set with
    /// [`with_limits`](Self::with_limits)). The limit cases need it, and fail without it.
    pub limited: Option<LimitedFactory<B>>,
}

/// How a [`Harness`] builds a fresh store enforcing given limits.
pub type LimitedFactory<B> = Arc<dyn Fn(TaskLimits) -> B + Send + Sync>;

impl<B> Harness<B> {
    /// A harness for `backend`, whose claims last `lease`, on the real clock and without a
    /// peer.
    pub fn new(backend: B, lease: Duration) -> Self {
        Harness {
            backend: Arc::new(backend),
            peer: None,
            lease,
            paused_clock: false,
            limited: None,
        }
    }

    /// Tells the suite how to build a fresh, empty store (same lease and clock) that
    /// enforces given limits, for the cases that check quotas and size limits.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferrymcp_tasks::backend::memory::MemoryBackend;
    /// use ferrymcp_test_helpers::backend_conformance::Harness;
    ///
    /// let lease = Duration::from_secs(30);
    /// let harness = Harness::new(MemoryBackend::with_lease(lease), lease)
    ///     .on_paused_clock()
    ///     .with_limits(move |limits| MemoryBackend::with_lease(lease).with_limits(limits));
    /// assert!(harness.limited.is_some());
    /// ```
    pub fn with_limits(mut self, make: impl Fn(TaskLimits) -> B + Send + Sync + 'static) -> Self {
        self.limited = Some(Arc::new(make));
        self
    }

    /// A harness on a fresh store enforcing `limits` (no peer).
    fn limited(&self, limits: TaskLimits) -> Harness<B> {
        let make = self.limited.as_ref().unwrap_or_else(|| {
            panic!(
                "this case checks task limits: give the harness a way to build a limited \
                 store with Harness::with_limits"
            )
        });
        Harness {
            backend: Arc::new(make(limits)),
            peer: None,
            lease: self.lease,
            paused_clock: self.paused_clock,
            limited: None,
        }
    }

    /// Declares that the backend's deadlines follow tokio's clock, so the clock cases run on
    /// a paused clock ([`backend_conformance_tests!`](crate::backend_conformance_tests)
    /// starts them paused).
    pub fn on_paused_clock(mut self) -> Self {
        self.paused_clock = true;
        self
    }

    /// Adds a second handle on the same store (see [`peer`](Self::peer)).
    pub fn with_peer(mut self, peer: B) -> Self {
        self.peer = Some(Arc::new(peer));
        self
    }

    /// How far from a deadline the clock cases look to see it not yet passed, or passed: 1 ms
    /// on a paused clock, a quarter lease on the real one.
    pub fn slack(&self) -> Duration {
        if self.paused_clock {
            Duration::from_millis(1)
        } else {
            self.lease / 4
        }
    }

    /// The peer if there is one, else the backend: the "other server process".
    fn other(&self) -> &Arc<B> {
        self.peer.as_ref().unwrap_or(&self.backend)
    }

    /// A TTL that no case outlives.
    fn long_ttl(&self) -> Duration {
        (self.lease * 120).max(Duration::from_secs(3600))
    }
}

/// How long the suite waits for something that should happen promptly (a wake-up, an event)
/// before it calls it missing. On a paused clock this elapses at once when nothing else can
/// happen.
const PATIENCE: Duration = Duration::from_secs(10);

/// The message of a task failed because its worker was lost (lease lapsed, no attempt left).
pub use ferrymcp_tasks::lost_worker::LOST_WORKER_MESSAGE;

/// Runs every case, in order, each against a fresh harness from `make`, in the calling
/// runtime; panics naming the first case that fails. The clock cases let time pass with
/// `tokio::time::sleep`: when the harness says [`paused_clock`](Harness::paused_clock), call
/// this from a runtime whose clock is paused (`#[tokio::test(start_paused = true)]`), or they
/// take real minutes. The race cases spawn tasks; on a multi-threaded runtime they race for
/// real.
///
/// ```no_run
/// use std::time::Duration;
/// use ferrymcp_tasks::backend::memory::MemoryBackend;
/// use ferrymcp_test_helpers::backend_conformance::{Harness, run_all};
///
/// #[tokio::test(start_paused = true)]
/// async fn memory_backend_conforms() {
///     let lease = Duration::from_secs(30);
///     run_all(|| Harness::new(MemoryBackend::with_lease(lease), lease).on_paused_clock()).await;
/// }
/// # fn main() {}
/// ```
pub async fn run_all<B: TaskBackend, F: Fn() -> Harness<B>>(make: F) {
    crate::__backend_conformance_cases! { __backend_conformance_run_all { make } }
}

/// Runs one case, turning its panic into one that names it.
#[doc(hidden)]
pub async fn __run_case(name: &str, case: impl Future<Output = ()>) {
    if let Err(panic) = AssertUnwindSafe(case).catch_unwind().await {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(a panic without a message)");
        panic!("backend conformance case `{name}` failed: {message}");
    }
}

/// Checks that a generated test's runtime matches the harness's clock.
#[doc(hidden)]
pub fn __expect_clock<B>(harness: &Harness<B>, paused: bool) {
    let (said, fix) = if harness.paused_clock {
        ("a paused clock", "backend_conformance_tests!(make)")
    } else {
        (
            "the real clock",
            "backend_conformance_tests!(real_clock, make)",
        )
    };
    assert_eq!(
        harness.paused_clock, paused,
        "the harness is on {said}, but the tests were generated for the other clock: use `{fix}`"
    );
}

/// The cases, by kind, passed to the macro named `$callback` after its own arguments.
#[doc(hidden)]
#[macro_export]
macro_rules! __backend_conformance_cases {
    ($callback:ident { $($args:tt)* }) => {
        $crate::$callback! {
            $($args)*;
            plain: [
                submit_is_visible_and_not_claimable_before_release,
                submit_keeps_ttl_and_poll_interval_in_whole_positive_ms,
                released_work_is_claimed_exactly_once,
                submit_with_a_taken_id_is_an_error,
                another_owner_sees_nothing_and_changes_nothing,
                anonymous_and_a_client_named_anon_are_disjoint,
                claim_respects_max,
                claim_waits_for_work_released_meanwhile,
                complete_is_terminal_and_keeps_the_result,
                fail_is_terminal_and_keeps_the_error_and_its_message,
                the_lease_holder_sets_the_status_message,
                writes_with_a_stale_lease_are_lost,
                writes_on_a_missing_task_are_gone,
                request_input_parks_the_task_under_fresh_client_keys,
                input_keys_are_never_reused_across_rounds,
                partial_input_waits_for_the_rest,
                the_last_answer_queues_the_next_round_with_the_answers,
                a_resumed_round_is_a_first_attempt,
                unknown_input_keys_are_ignored,
                input_for_a_task_not_waiting_is_ignored,
                cancel_of_queued_work_is_final,
                cancel_of_a_running_task_reaches_its_worker,
                cancel_of_a_task_waiting_for_input_withdraws_its_requests,
                cancel_of_a_terminal_task_changes_nothing,
                expire_when_idle_asks_again_within_a_second,
                changes_report_every_state_change,
                watch_sees_only_the_owners_tasks,
                a_run_handed_back_follows_the_lost_worker_policy_at_once,
                a_caller_over_its_quota_is_refused_and_nothing_is_stored,
                the_task_limit_refuses_every_caller,
                the_kept_limit_counts_finished_tasks,
                arguments_over_the_limit_are_refused,
                a_result_over_the_limit_fails_the_task_naming_the_limit,
                a_finished_task_frees_its_callers_slot,
                claims_are_fair_across_callers,
                resumed_rounds_and_reruns_queue_fairly,
                operators_see_every_owners_tasks_without_their_payloads,
                an_operators_cancel_reaches_the_worker_whoever_owns_the_task,
                workers_report_themselves_and_leave,
            ],
            race: [
                concurrent_claims_never_share_a_run,
                a_replayed_last_answer_resumes_exactly_once,
                input_racing_cancel_never_runs_after_the_cancel,
                complete_racing_cancel_records_one_outcome,
            ],
            clock: [
                claim_without_work_returns_empty_after_its_wait,
                a_lapsed_lease_is_redelivered_and_fences_out_the_old_worker,
                a_lapsed_lease_fails_a_task_without_retries,
                a_lost_worker_in_a_later_round_is_redelivered,
                heartbeats_keep_a_lease_alive,
                a_task_is_kept_until_its_ttl_and_unknown_after,
                an_expired_running_task_is_gone_for_its_worker,
                changes_report_a_lost_worker,
                an_expired_task_frees_its_slots,
            ],
        }
    };
}

/// [`run_all`]'s body.
#[doc(hidden)]
#[macro_export]
macro_rules! __backend_conformance_run_all {
    ($make:ident; $($kind:ident: [$($case:ident),* $(,)?]),* $(,)?) => {
        $($(
            {
                let harness = $make();
                $crate::backend_conformance::__run_case(
                    stringify!($case),
                    $crate::backend_conformance::$case(&harness),
                )
                .await;
            }
        )*)*
    };
}

/// Generates one `#[tokio::test]` per conformance case, in a module `conformance`, each on a
/// fresh harness from `$make` (an expression of type `impl Fn() -> Harness<B>`):
///
/// * `backend_conformance_tests!(make)`: the backend's deadlines follow tokio's clock
///   (`make` must build a harness [`on_paused_clock`](crate::backend_conformance::Harness::on_paused_clock));
///   the clock cases run with `#[tokio::test(start_paused = true)]`;
/// * `backend_conformance_tests!(real_clock, make)`: the backend has its own clock; every
///   case runs on the real clock.
///
/// The race cases run on a two-thread runtime so that they race for real. The caller's crate
/// needs `tokio` with `macros`, `rt-multi-thread` and, for a paused clock, `test-util`.
///
/// ```no_run
/// use std::time::Duration;
/// use ferrymcp_tasks::backend::memory::MemoryBackend;
/// use ferrymcp_test_helpers::backend_conformance::Harness;
///
/// const LEASE: Duration = Duration::from_secs(30);
/// ferrymcp_test_helpers::backend_conformance_tests!(|| {
///     Harness::new(MemoryBackend::with_lease(LEASE), LEASE).on_paused_clock()
/// });
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! backend_conformance_tests {
    (real_clock, $make:expr $(,)?) => {
        $crate::__backend_conformance_cases! { __backend_conformance_tests { real_clock, $make } }
    };
    ($make:expr $(,)?) => {
        $crate::__backend_conformance_cases! { __backend_conformance_tests { paused_clock, $make } }
    };
}

/// [`backend_conformance_tests!`]'s body.
#[doc(hidden)]
#[macro_export]
macro_rules! __backend_conformance_tests {
    (
        $clock:ident, $make:expr;
        plain: [$($plain:ident),* $(,)?],
        race: [$($race:ident),* $(,)?],
        clock: [$($timed:ident),* $(,)?] $(,)?
    ) => {
        /// The backend conformance suite (`ferrymcp_test_helpers::backend_conformance`).
        #[allow(unused_imports)]
        mod conformance {
            use super::*;

            $(
                #[tokio::test]
                async fn $plain() {
                    let make = $make;
                    let harness = make();
                    $crate::backend_conformance::$plain(&harness).await;
                }
            )*

            $(
                // What `#[tokio::test(flavor = "multi_thread")]` expands to, spelled out so
                // that only running the test needs `rt-multi-thread`.
                #[test]
                fn $race() {
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(2)
                        .enable_all()
                        .build()
                        .expect("a two-thread runtime")
                        .block_on(async {
                            let make = $make;
                            let harness = make();
                            $crate::backend_conformance::$race(&harness).await;
                        });
                }
            )*

            $( $crate::__backend_conformance_clock_test! { $clock, $make, $timed } )*
        }
    };
}

/// One clock case of [`backend_conformance_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __backend_conformance_clock_test {
    (paused_clock, $make:expr, $case:ident) => {
        #[tokio::test(start_paused = true)]
        async fn $case() {
            let make = $make;
            let harness = make();
            $crate::backend_conformance::__expect_clock(&harness, true);
            $crate::backend_conformance::$case(&harness).await;
        }
    };
    (real_clock, $make:expr, $case:ident) => {
        #[tokio::test]
        async fn $case() {
            let make = $make;
            let harness = make();
            $crate::backend_conformance::__expect_clock(&harness, false);
            $crate::backend_conformance::$case(&harness).await;
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Building blocks

/// The tool every task of the suite names.
const TOOL: &str = "conformance.echo";

fn anon() -> Owner {
    Owner::of(None)
}

fn alice() -> Owner {
    Owner::of(Some(
        &Principal::new("conformance-app").with_subject("alice"),
    ))
}

fn bob() -> Owner {
    Owner::of(Some(&Principal::new("conformance-app").with_subject("bob")))
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not a JSON object: {other}"),
    }
}

/// A task of `owner` with a long TTL, a 1.5 s poll interval and `max_attempts`.
fn new_task<B>(h: &Harness<B>, owner: &Owner, max_attempts: u32) -> NewTask {
    NewTask {
        id: ferrymcp_tasks::new_task_id(),
        owner: owner.clone(),
        caller: owner.as_str().to_owned(),
        tool: TOOL.to_owned(),
        version: Some("1.2.3".to_owned()),
        arguments: object(json!({"text": "hello", "n": 1})),
        context: object(json!({"protocolVersion": "2026-07-28", "caller": "conformance"})),
        ttl: Some(h.long_ttl()),
        poll_interval: Duration::from_millis(1500),
        max_attempts,
    }
}

/// The input request a tool makes under `tool_key` (distinct per key, so the suite can tell
/// which client-facing key stands for which tool key).
fn request(tool_key: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {"message": format!("question {tool_key}"), "requestedSchema": {"type": "object"}},
    })
}

/// The client's answer to [`request`]`(tool_key)`.
fn answer(tool_key: &str) -> Value {
    json!({"action": "accept", "content": {"answer": tool_key}})
}

/// An input round asking for `tool_keys`.
fn round(tool_keys: &[&str], state: &str) -> InputRound {
    InputRound {
        requests: tool_keys
            .iter()
            .map(|key| ((*key).to_owned(), request(key)))
            .collect(),
        request_state: Some(state.to_owned()),
    }
}

/// The answers to `tool_keys`, by the tool's keys (what the next run should receive).
fn tool_answers(tool_keys: &[&str]) -> InputResponses {
    tool_keys
        .iter()
        .map(|key| ((*key).to_owned(), answer(key)))
        .collect()
}

/// The answers to `tool_keys`, by their client-facing keys in `keys` (tool key → client key).
fn client_answers(keys: &BTreeMap<String, String>, tool_keys: &[&str]) -> InputResponses {
    tool_keys
        .iter()
        .map(|key| {
            let client_key = keys
                .get(*key)
                .unwrap_or_else(|| panic!("no client key for tool key {key:?}"));
            (client_key.clone(), answer(key))
        })
        .collect()
}

fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Lets `duration` pass: at once on a paused clock (tokio advances it to the sleep's end),
/// in real time otherwise. Never used to wait for another task.
async fn let_pass(duration: Duration) {
    tokio::time::sleep(duration).await;
}

async fn submit<B: TaskBackend>(h: &Harness<B>, task: &NewTask) -> TaskView {
    h.backend
        .submit(task.clone())
        .await
        .unwrap_or_else(|e| panic!("submit {}: {e}", task.id))
}

/// Submits and releases a task: its work is claimable.
async fn queued<B: TaskBackend>(h: &Harness<B>, owner: &Owner, max_attempts: u32) -> NewTask {
    let task = new_task(h, owner, max_attempts);
    submit(h, &task).await;
    release(h, owner, &task.id).await;
    task
}

/// Submits, releases and claims a task for `worker`.
async fn running<B: TaskBackend>(
    h: &Harness<B>,
    owner: &Owner,
    worker: &WorkerId,
    max_attempts: u32,
) -> (NewTask, Claimed) {
    let task = queued(h, owner, max_attempts).await;
    let run = claim_one(h, worker).await;
    assert_eq!(run.lease.task, task.id, "the only queued task is claimed");
    (task, run)
}

/// A running task parked on `tool_keys` by its run: the task, the run that parked it, and
/// the client-facing key of each tool key.
async fn parked<B: TaskBackend>(
    h: &Harness<B>,
    owner: &Owner,
    max_attempts: u32,
    tool_keys: &[&str],
) -> (NewTask, Claimed, BTreeMap<String, String>) {
    let (task, run) = running(h, owner, &WorkerId::new(), max_attempts).await;
    let keys = park(h, owner, &run, tool_keys, "state-1").await;
    (task, run, keys)
}

/// Parks `run`'s task on `tool_keys` and checks the view: `input_required`, one fresh client
/// key of the form `{taskId}:{16 hex}` per request, mapping to that request. Returns the
/// client key of each tool key.
async fn park<B: TaskBackend>(
    h: &Harness<B>,
    owner: &Owner,
    run: &Claimed,
    tool_keys: &[&str],
    state: &str,
) -> BTreeMap<String, String> {
    let id = &run.lease.task;
    let ack = h
        .backend
        .request_input(&run.lease, round(tool_keys, state))
        .await
        .expect("request_input");
    assert_eq!(ack, WriteAck::Recorded, "request_input by the lease holder");
    let shown = view(h, owner, id).await;
    assert_eq!(
        shown.status,
        TaskStatus::InputRequired,
        "after request_input"
    );
    assert_eq!(
        shown.input_requests.len(),
        tool_keys.len(),
        "one client key per request: {:?}",
        shown.input_requests
    );
    let mut keys = BTreeMap::new();
    for (client_key, shown_request) in &shown.input_requests {
        assert_client_key(id, client_key);
        let tool_key = tool_keys
            .iter()
            .find(|key| request(key) == *shown_request)
            .unwrap_or_else(|| {
                panic!("client key {client_key} maps to {shown_request}, which was not asked")
            });
        assert!(
            keys.insert((*tool_key).to_owned(), client_key.clone())
                .is_none(),
            "two client keys for the tool's {tool_key:?}"
        );
    }
    keys
}

/// A client-facing input key is `{taskId}:{16 hex digits}`.
fn assert_client_key(id: &str, key: &str) {
    let suffix = key
        .strip_prefix(id)
        .and_then(|rest| rest.strip_prefix(':'))
        .unwrap_or_else(|| panic!("input key {key:?} is not `{id}:` + 16 hex digits"));
    assert!(
        suffix.len() == 16 && suffix.bytes().all(|b| b.is_ascii_hexdigit()),
        "input key {key:?} is not `{id}:` + 16 hex digits"
    );
}

async fn release<B: TaskBackend>(h: &Harness<B>, owner: &Owner, id: &str) {
    h.backend
        .release(owner, id)
        .await
        .unwrap_or_else(|e| panic!("release {id}: {e}"));
}

async fn get<B: TaskBackend>(h: &Harness<B>, owner: &Owner, id: &str) -> Option<TaskView> {
    h.backend
        .get(owner, id)
        .await
        .unwrap_or_else(|e| panic!("get {id}: {e}"))
}

/// The task's view, which must exist for `owner`.
async fn view<B: TaskBackend>(h: &Harness<B>, owner: &Owner, id: &str) -> TaskView {
    get(h, owner, id)
        .await
        .unwrap_or_else(|| panic!("task {id} should be visible to its owner"))
}

async fn deliver<B: TaskBackend>(
    h: &Harness<B>,
    owner: &Owner,
    id: &str,
    responses: InputResponses,
) -> Option<UpdateAck> {
    h.backend
        .deliver_input(owner, id, responses)
        .await
        .unwrap_or_else(|e| panic!("deliver_input {id}: {e}"))
}

async fn cancel<B: TaskBackend>(h: &Harness<B>, owner: &Owner, id: &str) -> Option<CancelAck> {
    h.backend
        .cancel(owner, id)
        .await
        .unwrap_or_else(|e| panic!("cancel {id}: {e}"))
}

/// Claims exactly one run, waiting for it if need be.
async fn claim_one<B: TaskBackend>(h: &Harness<B>, worker: &WorkerId) -> Claimed {
    let mut claimed = h.backend.claim(worker, 1, PATIENCE).await.expect("claim");
    assert_eq!(
        claimed.len(),
        1,
        "one run should be claimable (waited {PATIENCE:?})"
    );
    claimed.remove(0)
}

/// Asserts that no run is claimable now.
async fn claim_none<B: TaskBackend>(h: &Harness<B>, why: &str) {
    let claimed = h
        .backend
        .claim(&WorkerId::new(), 16, Duration::ZERO)
        .await
        .expect("claim");
    let tasks: Vec<_> = claimed.iter().map(|run| &run.lease.task).collect();
    assert!(
        tasks.is_empty(),
        "no run should be claimable ({why}); claimed {tasks:?}"
    );
}

async fn heartbeat<B: TaskBackend>(h: &Harness<B>, lease: &Lease) -> LeaseState {
    let states = h
        .backend
        .heartbeat(std::slice::from_ref(lease))
        .await
        .expect("heartbeat");
    assert_eq!(states.len(), 1, "one state per lease");
    states[0]
}

async fn expire<B: TaskBackend>(h: &Harness<B>) -> Duration {
    h.backend.expire().await.expect("expire")
}

const HELD: LeaseState = LeaseState::Held {
    cancel_requested: false,
};

const CANCEL_REQUESTED: LeaseState = LeaseState::Held {
    cancel_requested: true,
};

/// Every worker-side write with `lease` gets `expected`, and none changes the task.
async fn assert_writes<B: TaskBackend>(h: &Harness<B>, lease: &Lease, expected: WriteAck) {
    let complete = h
        .backend
        .complete(lease, &json!({"content": [], "isError": false}))
        .await
        .expect("complete");
    assert_eq!(complete, expected, "complete with {lease:?}");
    let fail = h
        .backend
        .fail(lease, &json!({"code": -32603, "message": "late"}))
        .await
        .expect("fail");
    assert_eq!(fail, expected, "fail with {lease:?}");
    let input = h
        .backend
        .request_input(lease, round(&["late"], "late"))
        .await
        .expect("request_input");
    assert_eq!(input, expected, "request_input with {lease:?}");
    let status = h
        .backend
        .set_status_message(lease, "late".into())
        .await
        .expect("set_status_message");
    assert_eq!(status, expected, "set_status_message with {lease:?}");
}

/// Discards the changes published so far.
fn drain(changes: &mut broadcast::Receiver<String>) {
    while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = changes.try_recv() {}
}

/// Waits for `id` on `changes`.
async fn expect_change(changes: &mut broadcast::Receiver<String>, id: &str, what: &str) {
    let seen = timeout(PATIENCE, async {
        loop {
            match changes.recv().await {
                Ok(changed) if changed == id => return,
                Ok(_) => {}
                // Lagged behind: ours may be among the missed; count it.
                Err(broadcast::error::RecvError::Lagged(_)) => return,
                Err(broadcast::error::RecvError::Closed) => {
                    panic!("the changes channel closed")
                }
            }
        }
    })
    .await;
    assert!(
        seen.is_ok(),
        "{what} should publish the task id on changes()"
    );
}

/// Waits for a cancel event for `id` on a worker's events.
async fn expect_cancel_event(events: &mut mpsc::UnboundedReceiver<WorkerEvent>, id: &str) {
    let event = timeout(PATIENCE, events.recv())
        .await
        .unwrap_or_else(|_| panic!("the holder should get WorkerEvent::Cancel({id})"));
    assert_eq!(event, Some(WorkerEvent::Cancel(id.to_owned())));
}

fn join<T>(joined: Result<T, tokio::task::JoinError>) -> T {
    joined.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

// ---------------------------------------------------------------------------------------------
// Submit and release

/// A submitted task is visible to `get` as soon as `submit` returns (also from the
/// [`peer`](Harness::peer)): `working`, no message, result or requests, its TTL and poll
/// interval as given, Unix-millisecond timestamps. No worker can claim it before `release`
///.
pub async fn submit_is_visible_and_not_claimable_before_release<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let task = new_task(h, &owner, 1);
    let replied = submit(h, &task).await;
    let seen = view(h, &owner, &task.id).await;
    let ttl_ms = u64::try_from(h.long_ttl().as_millis()).expect("ttl in ms");
    for (source, shown) in [("submit's reply", &replied), ("get", &seen)] {
        assert_eq!(shown.id, task.id, "{source}");
        assert_eq!(shown.status, TaskStatus::Working, "{source}");
        assert_eq!(shown.status_message, None, "{source}");
        assert_eq!(shown.result, None, "{source}");
        assert_eq!(shown.error, None, "{source}");
        assert!(shown.input_requests.is_empty(), "{source}");
        assert_eq!(shown.ttl_ms, Some(ttl_ms), "{source}: ttlMs");
        assert_eq!(shown.poll_interval_ms, 1500, "{source}: pollIntervalMs");
        assert!(shown.updated_at_ms >= shown.created_at_ms, "{source}");
    }
    assert_eq!(seen.created_at_ms, replied.created_at_ms);
    let hour_ms = 3_600_000;
    let now = wall_clock_ms();
    assert!(
        seen.created_at_ms.abs_diff(now) < hour_ms,
        "createdAt is Unix milliseconds: {} vs now {now}",
        seen.created_at_ms
    );
    if let Some(peer) = &h.peer {
        let from_peer = peer.get(&owner, &task.id).await.expect("get from the peer");
        assert_eq!(
            from_peer.map(|v| v.status),
            Some(TaskStatus::Working),
            "another process sees the task as soon as submit returns (R16)"
        );
    }
    claim_none(h, "D32: nothing runs before release").await;
}

/// `ttlMs` and `pollIntervalMs` are whole, positive milliseconds: whole-millisecond
/// durations are kept exactly, others rounded to a neighbouring whole millisecond, zero
/// becomes at least 1, and no TTL stays no TTL.
pub async fn submit_keeps_ttl_and_poll_interval_in_whole_positive_ms<B: TaskBackend>(
    h: &Harness<B>,
) {
    let owner = anon();
    /// A TTL and a poll interval, and the ranges their milliseconds must fall in.
    type Case = (Option<Duration>, Duration, Option<(u64, u64)>, (u64, u64));
    let cases: [Case; 4] = [
        (
            Some(Duration::from_millis(5_400_000)),
            Duration::from_millis(2500),
            Some((5_400_000, 5_400_000)),
            (2500, 2500),
        ),
        (None, Duration::from_secs(5), None, (5000, 5000)),
        (
            Some(Duration::from_micros(3_600_000_500)),
            Duration::from_micros(1500),
            Some((3_600_000, 3_600_001)),
            (1, 2),
        ),
        (
            Some(h.long_ttl()),
            Duration::ZERO,
            Some((
                u64::try_from(h.long_ttl().as_millis()).expect("ms"),
                u64::try_from(h.long_ttl().as_millis()).expect("ms"),
            )),
            (1, 1),
        ),
    ];
    for (ttl, poll, ttl_range, poll_range) in cases {
        let mut task = new_task(h, &owner, 1);
        task.ttl = ttl;
        task.poll_interval = poll;
        let replied = submit(h, &task).await;
        let seen = view(h, &owner, &task.id).await;
        for shown in [&replied, &seen] {
            match (ttl_range, shown.ttl_ms) {
                (None, None) => {}
                (Some((low, high)), Some(ms)) => assert!(
                    (low..=high).contains(&ms) && ms > 0,
                    "ttl {ttl:?} shows as {ms} ms, expected {low}..={high}"
                ),
                (expected, shown) => {
                    panic!("ttl {ttl:?} shows as {shown:?}, expected {expected:?}")
                }
            }
            let (low, high) = poll_range;
            assert!(
                (low..=high).contains(&shown.poll_interval_ms) && shown.poll_interval_ms > 0,
                "poll interval {poll:?} shows as {} ms, expected {low}..={high}",
                shown.poll_interval_ms
            );
        }
    }
}

/// A released task's work is claimed exactly once, with everything the worker needs
/// (owner, tool, version, arguments, context; attempt 1, round 1, no answers or state);
/// releasing twice, or again while it runs, queues nothing more.
pub async fn released_work_is_claimed_exactly_once<B: TaskBackend>(h: &Harness<B>) {
    let owner = alice();
    let task = new_task(h, &owner, 1);
    submit(h, &task).await;
    release(h, &owner, &task.id).await;
    release(h, &owner, &task.id).await;
    let worker = WorkerId::new();
    let claimed = h.backend.claim(&worker, 8, PATIENCE).await.expect("claim");
    assert_eq!(claimed.len(), 1, "one run for a task released twice");
    let run = &claimed[0];
    assert_eq!(run.lease.task, task.id);
    assert_eq!(run.lease.worker, worker);
    assert_eq!(run.owner, owner);
    assert_eq!(run.tool, task.tool);
    assert_eq!(run.version, task.version);
    assert_eq!(run.arguments, task.arguments);
    assert_eq!(run.context, task.context);
    assert_eq!(run.attempt, 1, "the first start");
    assert_eq!(run.round, 1, "the first round");
    assert!(
        run.responses.as_ref().is_none_or(InputResponses::is_empty),
        "no answers in round 1: {:?}",
        run.responses
    );
    assert_eq!(run.request_state, None);
    claim_none(h, "the only run is taken").await;
    release(h, &owner, &task.id).await;
    claim_none(h, "releasing a running task queues nothing").await;
    assert_eq!(heartbeat(h, &run.lease).await, HELD);
    assert_eq!(view(h, &owner, &task.id).await.status, TaskStatus::Working);
}

/// Submitting an id that is taken (by the same or another owner) is an error and leaves
/// the existing task as it was.
pub async fn submit_with_a_taken_id_is_an_error<B: TaskBackend>(h: &Harness<B>) {
    let owner = alice();
    let task = new_task(h, &owner, 1);
    submit(h, &task).await;
    let before = view(h, &owner, &task.id).await;
    let mut same_owner = new_task(h, &owner, 3);
    same_owner.id.clone_from(&task.id);
    same_owner.tool = "conformance.other".to_owned();
    same_owner.ttl = None;
    assert!(
        h.backend.submit(same_owner).await.is_err(),
        "a duplicate id must be refused"
    );
    let mut other_owner = new_task(h, &bob(), 1);
    other_owner.id.clone_from(&task.id);
    assert!(
        h.backend.submit(other_owner).await.is_err(),
        "a duplicate id of another owner must be refused"
    );
    assert_eq!(
        view(h, &owner, &task.id).await,
        before,
        "the first task is unchanged"
    );
    assert_eq!(
        get(h, &bob(), &task.id).await,
        None,
        "bob did not get the id"
    );
    release(h, &owner, &task.id).await;
    let run = claim_one(h, &WorkerId::new()).await;
    assert_eq!(run.tool, TOOL, "the first submission runs");
    assert_eq!(run.owner, owner);
}

// ---------------------------------------------------------------------------------------------
// Scoping

/// Another owner's `get`, `deliver_input` and `cancel` answer `None` (as for a missing task),
/// and neither they nor its `release` change anything.
pub async fn another_owner_sees_nothing_and_changes_nothing<B: TaskBackend>(h: &Harness<B>) {
    let (owner, stranger) = (alice(), bob());
    let (task, _run, keys) = parked(h, &owner, 1, &["a", "b"]).await;
    let before = view(h, &owner, &task.id).await;
    assert_eq!(get(h, &stranger, &task.id).await, None, "get");
    assert_eq!(
        deliver(h, &stranger, &task.id, client_answers(&keys, &["a", "b"])).await,
        None,
        "deliver_input"
    );
    assert_eq!(cancel(h, &stranger, &task.id).await, None, "cancel");
    release(h, &stranger, &task.id).await;
    assert_eq!(
        view(h, &owner, &task.id).await,
        before,
        "the task is unchanged"
    );
    claim_none(h, "nothing became runnable").await;

    let unreleased = new_task(h, &owner, 1);
    submit(h, &unreleased).await;
    release(h, &stranger, &unreleased.id).await;
    claim_none(h, "another owner cannot release a task").await;

    assert_eq!(
        deliver(h, &owner, &task.id, client_answers(&keys, &["a", "b"])).await,
        Some(UpdateAck::Resumed),
        "the owner still can"
    );
}

/// The anonymous keyspace and a client literally named `anon` are disjoint.
pub async fn anonymous_and_a_client_named_anon_are_disjoint<B: TaskBackend>(h: &Harness<B>) {
    let anonymous = anon();
    let named = Owner::of(Some(&Principal::new("anon")));
    assert_ne!(anonymous, named);
    let mine = new_task(h, &anonymous, 1);
    let theirs = new_task(h, &named, 1);
    submit(h, &mine).await;
    submit(h, &theirs).await;
    for (owner, own, foreign) in [(&anonymous, &mine, &theirs), (&named, &theirs, &mine)] {
        assert!(
            get(h, owner, &own.id).await.is_some(),
            "{owner:?} sees its own"
        );
        assert_eq!(get(h, owner, &foreign.id).await, None, "{owner:?} get");
        assert_eq!(
            cancel(h, owner, &foreign.id).await,
            None,
            "{owner:?} cancel"
        );
        assert_eq!(
            deliver(h, owner, &foreign.id, InputResponses::new()).await,
            None,
            "{owner:?} deliver_input"
        );
    }
    for (owner, task) in [(&anonymous, &mine), (&named, &theirs)] {
        assert_eq!(view(h, owner, &task.id).await.status, TaskStatus::Working);
    }
}

// ---------------------------------------------------------------------------------------------
// Claims

/// A claim returns at least one and at most `max` runs when work is ready, and every
/// queued run exactly once across claims.
pub async fn claim_respects_max<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let mut queued_ids = BTreeSet::new();
    for _ in 0..5 {
        queued_ids.insert(queued(h, &owner, 1).await.id);
    }
    let worker = WorkerId::new();
    let mut claimed_ids = BTreeSet::new();
    for max in [2, 1, 8, 8, 8] {
        if claimed_ids.len() == queued_ids.len() {
            break;
        }
        let claimed = h
            .backend
            .claim(&worker, max, PATIENCE)
            .await
            .expect("claim");
        assert!(
            (1..=max).contains(&claimed.len()),
            "claim(max = {max}) with work ready returned {} runs",
            claimed.len()
        );
        for run in claimed {
            assert!(
                claimed_ids.insert(run.lease.task.clone()),
                "{} claimed twice",
                run.lease.task
            );
        }
    }
    assert_eq!(claimed_ids, queued_ids, "every queued run is claimed");
    claim_none(h, "all taken").await;
}

/// A claim with nothing ready waits, and wakes as soon as work is released meanwhile (not
/// at the end of its wait).
pub async fn claim_waits_for_work_released_meanwhile<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let task = new_task(h, &owner, 1);
    submit(h, &task).await;
    let wait = PATIENCE * 6;
    let (started, start) = oneshot::channel::<()>();
    let releaser = tokio::spawn({
        let backend = Arc::clone(h.other());
        let (owner, id) = (owner.clone(), task.id.clone());
        async move {
            start.await.expect("the claim started");
            backend.release(&owner, &id).await
        }
    });
    let worker = WorkerId::new();
    let began = Instant::now();
    let claim = h.backend.claim(&worker, 1, wait);
    tokio::pin!(claim);
    assert!(
        futures::poll!(claim.as_mut()).is_pending(),
        "a claim with nothing ready should wait"
    );
    started.send(()).expect("the releaser waits");
    let claimed = timeout(PATIENCE, claim)
        .await
        .unwrap_or_else(|_| panic!("the waiting claim was not woken by the release"))
        .expect("claim");
    join(releaser.await).expect("release");
    assert_eq!(claimed.len(), 1, "the released run");
    assert_eq!(claimed[0].lease.task, task.id);
    assert!(began.elapsed() < wait, "woken before the end of its wait");
}

/// Concurrent claims never get the same run: many claimers draining a queue get each run
/// once, and two claimers waiting for one released run do not both get it.
pub async fn concurrent_claims_never_share_a_run<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let mut queued_ids = BTreeSet::new();
    for _ in 0..24 {
        queued_ids.insert(queued(h, &owner, 1).await.id);
    }
    let claimers = 4;
    let barrier = Arc::new(Barrier::new(claimers));
    let handles: Vec<_> = (0..claimers)
        .map(|i| {
            let backend = Arc::clone(if i % 2 == 0 { &h.backend } else { h.other() });
            let barrier = Arc::clone(&barrier);
            tokio::spawn(async move {
                let worker = WorkerId::new();
                let mut mine = Vec::new();
                barrier.wait().await;
                loop {
                    let claimed = backend
                        .claim(&worker, 3, Duration::ZERO)
                        .await
                        .expect("claim");
                    if claimed.is_empty() {
                        return mine;
                    }
                    mine.extend(claimed.into_iter().map(|run| run.lease));
                }
            })
        })
        .collect();
    let mut claimed_ids = BTreeSet::new();
    for handle in handles {
        for lease in join(handle.await) {
            assert!(
                claimed_ids.insert(lease.task.clone()),
                "double claim of {}",
                lease.task
            );
        }
    }
    assert_eq!(claimed_ids, queued_ids, "every run claimed exactly once");

    // Two waiting claimers, one run: one gets it, the other the next one.
    let (first, second) = (new_task(h, &owner, 1), new_task(h, &owner, 1));
    submit(h, &first).await;
    submit(h, &second).await;
    let waiting = |backend: &Arc<B>| {
        let backend = Arc::clone(backend);
        tokio::spawn(async move {
            backend
                .claim(&WorkerId::new(), 1, PATIENCE)
                .await
                .expect("claim")
        })
    };
    let (a, b) = (waiting(&h.backend), waiting(h.other()));
    release(h, &owner, &first.id).await;
    let (winner, loser) = match futures::future::select(a, b).await {
        futures::future::Either::Left((won, other)) => (join(won), other),
        futures::future::Either::Right((won, other)) => (join(won), other),
    };
    let winner: Vec<_> = winner.into_iter().map(|run| run.lease.task).collect();
    assert_eq!(
        winner.as_slice(),
        std::slice::from_ref(&first.id),
        "the first claimer back has the run"
    );
    release(h, &owner, &second.id).await;
    let loser: Vec<_> = join(loser.await)
        .into_iter()
        .map(|run| run.lease.task)
        .collect();
    assert_eq!(
        loser.as_slice(),
        std::slice::from_ref(&second.id),
        "the other claimer gets the next run only"
    );
}

// ---------------------------------------------------------------------------------------------
// Worker-side writes

/// `complete` makes the task `completed` with the result; every later write is refused
/// with `Terminal` and changes nothing; the holder's heartbeat says `Gone`.
pub async fn complete_is_terminal_and_keeps_the_result<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let (task, run) = running(h, &owner, &WorkerId::new(), 1).await;
    let before = view(h, &owner, &task.id).await;
    let result = json!({"content": [{"type": "text", "text": "done"}], "isError": false});
    let ack = h
        .backend
        .complete(&run.lease, &result)
        .await
        .expect("complete");
    assert_eq!(ack, WriteAck::Recorded);
    let done = view(h, &owner, &task.id).await;
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.result, Some(result));
    assert_eq!(done.error, None);
    assert!(done.input_requests.is_empty());
    assert!(done.updated_at_ms >= before.updated_at_ms);
    assert_writes(h, &run.lease, WriteAck::Terminal).await;
    assert_eq!(heartbeat(h, &run.lease).await, LeaseState::Gone, "terminal");
    assert_eq!(view(h, &owner, &task.id).await, done, "nothing changed");
    assert_eq!(
        cancel(h, &owner, &task.id).await,
        Some(CancelAck::AlreadyTerminal)
    );
    claim_none(h, "a completed task has no work").await;
}

/// `set_status_message` by the lease holder shows in the task and announces a change; the
/// task keeps running (how progress surfaces inside a task).
pub async fn the_lease_holder_sets_the_status_message<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let (task, run) = running(h, &owner, &WorkerId::new(), 1).await;
    let mut changes = h.backend.changes();
    watch(h, &owner, &task.id).await;
    let ack = h
        .backend
        .set_status_message(&run.lease, "copying (1/2)".into())
        .await
        .expect("set_status_message");
    assert_eq!(ack, WriteAck::Recorded);
    let current = view(h, &owner, &task.id).await;
    assert_eq!(current.status, TaskStatus::Working);
    assert_eq!(current.status_message.as_deref(), Some("copying (1/2)"));
    if let Some(changes) = changes.as_mut() {
        expect_change(changes, &task.id, "a status message").await;
    }
    assert_eq!(heartbeat(h, &run.lease).await, HELD);
}

/// `fail` makes the task `failed` with the JSON-RPC error, its `message` as the status
/// message; every later write is refused with `Terminal`.
pub async fn fail_is_terminal_and_keeps_the_error_and_its_message<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let (task, run) = running(h, &owner, &WorkerId::new(), 1).await;
    let error =
        json!({"code": -32603, "message": "the upstream refused", "data": {"retry": false}});
    let ack = h.backend.fail(&run.lease, &error).await.expect("fail");
    assert_eq!(ack, WriteAck::Recorded);
    let failed = view(h, &owner, &task.id).await;
    assert_eq!(failed.status, TaskStatus::Failed);
    assert_eq!(failed.error, Some(error));
    assert_eq!(
        failed.status_message.as_deref(),
        Some("the upstream refused")
    );
    assert_eq!(failed.result, None);
    assert_writes(h, &run.lease, WriteAck::Terminal).await;
    assert_eq!(view(h, &owner, &task.id).await, failed, "nothing changed");
    claim_none(h, "a failed task has no work").await;
}

/// A lease with another fence or another worker cannot write (`Lost`) nor renew (`Lost`),
/// and changes nothing; the real lease still can.
pub async fn writes_with_a_stale_lease_are_lost<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let (task, run) = running(h, &owner, &WorkerId::new(), 1).await;
    let before = view(h, &owner, &task.id).await;
    let stale = [
        Lease {
            fence: run.lease.fence.wrapping_add(1),
            ..run.lease.clone()
        },
        Lease {
            fence: run.lease.fence.wrapping_sub(1),
            ..run.lease.clone()
        },
        Lease {
            worker: WorkerId::new(),
            ..run.lease.clone()
        },
    ];
    for lease in &stale {
        assert_writes(h, lease, WriteAck::Lost).await;
        assert_eq!(heartbeat(h, lease).await, LeaseState::Lost, "{lease:?}");
    }
    assert_eq!(view(h, &owner, &task.id).await, before, "nothing changed");
    assert_eq!(heartbeat(h, &run.lease).await, HELD);
    let ack = h
        .backend
        .complete(&run.lease, &json!({"ok": true}))
        .await
        .expect("complete");
    assert_eq!(ack, WriteAck::Recorded, "the current lease writes");
}

/// On a task that does not exist, writes and heartbeats say `Gone`, and the request side
/// finds nothing.
pub async fn writes_on_a_missing_task_are_gone<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let lease = Lease {
        task: ferrymcp_tasks::new_task_id(),
        worker: WorkerId::new(),
        fence: 1,
    };
    assert_writes(h, &lease, WriteAck::Gone).await;
    assert_eq!(heartbeat(h, &lease).await, LeaseState::Gone);
    assert_eq!(get(h, &owner, &lease.task).await, None);
    assert_eq!(
        deliver(h, &owner, &lease.task, InputResponses::new()).await,
        None
    );
    assert_eq!(cancel(h, &owner, &lease.task).await, None);
    release(h, &owner, &lease.task).await;
    claim_none(h, "releasing a missing task").await;
}

// ---------------------------------------------------------------------------------------------
// Input rounds

/// `request_input` parks the task `input_required` under fresh client keys
/// (`{taskId}:{16 hex}`, one per request, showing it); the run ends: nothing is claimable
/// while it waits, not even after a `release`, and the ended run's lease can no longer
/// write (`Lost`).
pub async fn request_input_parks_the_task_under_fresh_client_keys<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let (task, run, keys) = parked(h, &owner, 1, &["a", "b"]).await;
    let waiting = view(h, &owner, &task.id).await;
    assert_eq!(waiting.result, None);
    assert_eq!(waiting.error, None);
    for (tool_key, client_key) in &keys {
        assert_ne!(
            tool_key, client_key,
            "the client never sees the tool's keys"
        );
    }
    claim_none(h, "no run while waiting for input (C35)").await;
    release(h, &owner, &task.id).await;
    claim_none(h, "release does not resume a task waiting for input").await;
    let late = h
        .backend
        .complete(&run.lease, &json!({"late": true}))
        .await
        .expect("complete");
    assert_eq!(
        late,
        WriteAck::Lost,
        "the parked run's lease is no longer current"
    );
    assert_eq!(view(h, &owner, &task.id).await, waiting, "nothing changed");
}

/// Every round gets new client keys, even for the same tool keys, and an earlier round's
/// keys are ignored later.
pub async fn input_keys_are_never_reused_across_rounds<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let (task, _first, mut keys) = parked(h, &owner, 1, &["q"]).await;
    let mut seen: BTreeSet<String> = keys.values().cloned().collect();
    for round_no in 2..=4 {
        let ack = deliver(h, &owner, &task.id, client_answers(&keys, &["q"])).await;
        assert_eq!(ack, Some(UpdateAck::Resumed), "round {}", round_no - 1);
        let run = claim_one(h, &WorkerId::new()).await;
        assert_eq!(run.round, round_no);
        let old = keys;
        keys = park(h, &owner, &run, &["q"], &format!("state-{round_no}")).await;
        for key in keys.values() {
            assert!(seen.insert(key.clone()), "client key {key} was used before");
        }
        let replay = deliver(h, &owner, &task.id, client_answers(&old, &["q"])).await;
        assert_eq!(replay, Some(UpdateAck::Ignored), "a previous round's key");
        let shown = view(h, &owner, &task.id).await;
        let outstanding: BTreeSet<_> = shown.input_requests.keys().cloned().collect();
        let expected: BTreeSet<_> = keys.values().cloned().collect();
        assert_eq!(outstanding, expected, "the new round is still outstanding");
    }
}

/// Answering some requests takes them (`Waiting`) and lists only the rest; a taken
/// key is not taken again; nothing runs until the last answer, which resumes the task.
pub async fn partial_input_waits_for_the_rest<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let (task, _run, keys) = parked(h, &owner, 1, &["a", "b", "c"]).await;
    let ack = deliver(h, &owner, &task.id, client_answers(&keys, &["a"])).await;
    assert_eq!(ack, Some(UpdateAck::Waiting));
    let shown = view(h, &owner, &task.id).await;
    assert_eq!(shown.status, TaskStatus::InputRequired);
    let outstanding: BTreeSet<_> = shown.input_requests.keys().cloned().collect();
    let rest: BTreeSet<_> = [&keys["b"], &keys["c"]].into_iter().cloned().collect();
    assert_eq!(outstanding, rest, "only the unanswered requests are listed");
    claim_none(h, "requests are outstanding").await;
    let again = deliver(h, &owner, &task.id, client_answers(&keys, &["a"])).await;
    assert_eq!(
        again,
        Some(UpdateAck::Ignored),
        "an answered key is not outstanding"
    );
    let ack = deliver(h, &owner, &task.id, client_answers(&keys, &["b"])).await;
    assert_eq!(ack, Some(UpdateAck::Waiting));
    claim_none(h, "one request is outstanding").await;
    let ack = deliver(h, &owner, &task.id, client_answers(&keys, &["c"])).await;
    assert_eq!(ack, Some(UpdateAck::Resumed), "the last answer");
    let resumed = view(h, &owner, &task.id).await;
    assert_eq!(resumed.status, TaskStatus::Working);
    assert!(resumed.input_requests.is_empty());
    let run = claim_one(h, &WorkerId::new()).await;
    assert_eq!(
        run.responses,
        Some(tool_answers(&["a", "b", "c"])),
        "every answer, by the tool's keys"
    );
}

/// The last answer makes the task `working` again and queues exactly one next run, which
/// carries the round's answers by the tool's own keys and the tool's request state, under
/// a new fence.
pub async fn the_last_answer_queues_the_next_round_with_the_answers<B: TaskBackend>(
    h: &Harness<B>,
) {
    let owner = alice();
    let (task, first, keys) = parked(h, &owner, 1, &["x", "y"]).await;
    let ack = deliver(h, &owner, &task.id, client_answers(&keys, &["x", "y"])).await;
    assert_eq!(ack, Some(UpdateAck::Resumed));
    let resumed = view(h, &owner, &task.id).await;
    assert_eq!(resumed.status, TaskStatus::Working);
    assert_eq!(resumed.status_message, None);
    assert!(resumed.input_requests.is_empty());
    let worker = WorkerId::new();
    let claimed = h.backend.claim(&worker, 8, PATIENCE).await.expect("claim");
    assert_eq!(claimed.len(), 1, "exactly one next run");
    let run = &claimed[0];
    assert_eq!(run.lease.task, task.id);
    assert_ne!(
        run.lease.fence, first.lease.fence,
        "a new claim, a new fence"
    );
    assert_eq!(run.round, 2);
    assert_eq!(run.responses, Some(tool_answers(&["x", "y"])));
    assert_eq!(run.request_state.as_deref(), Some("state-1"));
    assert_eq!(run.owner, owner);
    assert_eq!(run.tool, task.tool);
    assert_eq!(run.arguments, task.arguments);
    assert_eq!(run.context, task.context);
    claim_none(h, "one run per round").await;
    let ack = h
        .backend
        .complete(&run.lease, &json!({"ok": true}))
        .await
        .expect("complete");
    assert_eq!(ack, WriteAck::Recorded);
}

/// A new input round's run is a first start of the work (`attempt` 1: attempts count
/// starts after a lost worker, not rounds), so rounds do not use up `max_attempts`.
pub async fn a_resumed_round_is_a_first_attempt<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let (task, first, mut keys) = parked(h, &owner, 2, &["q"]).await;
    assert_eq!(first.attempt, 1);
    for round_no in 2..=3 {
        let ack = deliver(h, &owner, &task.id, client_answers(&keys, &["q"])).await;
        assert_eq!(ack, Some(UpdateAck::Resumed));
        let run = claim_one(h, &WorkerId::new()).await;
        assert_eq!(run.round, round_no);
        assert_eq!(
            run.attempt, 1,
            "round {round_no} is started for the first time: attempt 1, not {}",
            run.attempt
        );
        keys = park(h, &owner, &run, &["q"], "state").await;
    }
}

/// A replayed last answer (two identical `tasks/update` racing, from two processes when
/// there is a peer) resumes the task exactly once: one `Resumed`, one `Ignored`, one run
///.
pub async fn a_replayed_last_answer_resumes_exactly_once<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    for _ in 0..8 {
        let (task, _run, keys) = parked(h, &owner, 1, &["q"]).await;
        let barrier = Arc::new(Barrier::new(2));
        let update = |backend: &Arc<B>| {
            let (backend, barrier) = (Arc::clone(backend), Arc::clone(&barrier));
            let (owner, id, answers) = (
                owner.clone(),
                task.id.clone(),
                client_answers(&keys, &["q"]),
            );
            tokio::spawn(async move {
                barrier.wait().await;
                backend
                    .deliver_input(&owner, &id, answers)
                    .await
                    .expect("deliver_input")
            })
        };
        let (a, b) = (update(&h.backend), update(h.other()));
        let (a, b) = tokio::join!(a, b);
        let mut acks = [join(a), join(b)];
        acks.sort_by_key(|ack| format!("{ack:?}"));
        assert_eq!(
            acks,
            [Some(UpdateAck::Ignored), Some(UpdateAck::Resumed)],
            "exactly one of two identical updates resumes"
        );
        let claimed = h
            .backend
            .claim(&WorkerId::new(), 8, PATIENCE)
            .await
            .expect("claim");
        assert_eq!(claimed.len(), 1, "exactly one run for the round");
        claim_none(h, "no second run").await;
        let ack = h
            .backend
            .complete(&claimed[0].lease, &json!({}))
            .await
            .expect("complete");
        assert_eq!(ack, WriteAck::Recorded);
    }
}

/// Answers under keys that are not outstanding (none at all, made-up keys, the tool's own
/// keys, another task's keys) are ignored and change nothing; with a real key among
/// them only the real one counts.
pub async fn unknown_input_keys_are_ignored<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let (task, _run, keys) = parked(h, &owner, 1, &["a", "b"]).await;
    let (other, _other_run, other_keys) = parked(h, &owner, 1, &["a"]).await;
    let before = view(h, &owner, &task.id).await;
    let made_up = format!("{}:0123456789abcdef", task.id);
    let unknown: [(&str, InputResponses); 4] = [
        ("no answers", InputResponses::new()),
        (
            "a made-up key",
            InputResponses::from([(made_up.clone(), answer("a"))]),
        ),
        ("the tool's own keys", tool_answers(&["a", "b"])),
        ("another task's key", client_answers(&other_keys, &["a"])),
    ];
    for (what, responses) in unknown {
        assert_eq!(
            deliver(h, &owner, &task.id, responses).await,
            Some(UpdateAck::Ignored),
            "{what}"
        );
        assert_eq!(
            view(h, &owner, &task.id).await,
            before,
            "{what}: nothing changed"
        );
    }
    let other_view = view(h, &owner, &other.id).await;
    assert_eq!(
        other_view.input_requests.len(),
        1,
        "the other task keeps its request"
    );

    let mut mixed = client_answers(&keys, &["a"]);
    mixed.insert(made_up, answer("z"));
    assert_eq!(
        deliver(h, &owner, &task.id, mixed).await,
        Some(UpdateAck::Waiting),
        "the real key is taken"
    );
    assert_eq!(
        deliver(h, &owner, &task.id, client_answers(&keys, &["b"])).await,
        Some(UpdateAck::Resumed)
    );
    let run = claim_one(h, &WorkerId::new()).await;
    assert_eq!(
        run.responses,
        Some(tool_answers(&["a", "b"])),
        "only the real answers"
    );
}

/// `deliver_input` on a task that is not `input_required` (queued, running, terminal) is
/// ignored and changes nothing.
pub async fn input_for_a_task_not_waiting_is_ignored<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let responses =
        |id: &str| InputResponses::from([(format!("{id}:0123456789abcdef"), answer("a"))]);

    let task = queued(h, &owner, 1).await;
    let before = view(h, &owner, &task.id).await;
    assert_eq!(
        deliver(h, &owner, &task.id, responses(&task.id)).await,
        Some(UpdateAck::Ignored),
        "queued"
    );
    assert_eq!(view(h, &owner, &task.id).await, before);
    let run = claim_one(h, &WorkerId::new()).await;
    assert_eq!(
        deliver(h, &owner, &task.id, responses(&task.id)).await,
        Some(UpdateAck::Ignored),
        "running"
    );
    assert_eq!(heartbeat(h, &run.lease).await, HELD);
    let ack = h
        .backend
        .complete(&run.lease, &json!({"ok": true}))
        .await
        .expect("complete");
    assert_eq!(ack, WriteAck::Recorded);
    let done = view(h, &owner, &task.id).await;
    assert_eq!(
        deliver(h, &owner, &task.id, responses(&task.id)).await,
        Some(UpdateAck::Ignored),
        "completed"
    );
    assert_eq!(view(h, &owner, &task.id).await, done);
    claim_none(h, "nothing was resumed").await;
}

// ---------------------------------------------------------------------------------------------
// The operators' view

/// An operator's listing (when the backend has one) holds every owner's tasks, newest first,
/// with where each is (queued, running on its worker under a lease, ended with its error)
/// and never a task's arguments, context or result; filters by status, tool and age select;
/// `record` shows one task and `None` for an unknown id; the store counts ended tasks.
pub async fn operators_see_every_owners_tasks_without_their_payloads<B: TaskBackend>(
    h: &Harness<B>,
) {
    let worker = WorkerId::new();
    let (held, _run) = running(h, &bob(), &worker, 1).await;
    let (done, done_run) = running(h, &anon(), &WorkerId::new(), 1).await;
    let result = json!({"content": [{"type": "text", "text": "secret result"}], "isError": false});
    h.backend
        .complete(&done_run.lease, &result)
        .await
        .expect("complete");
    let (failed, failed_run) = running(h, &alice(), &WorkerId::new(), 1).await;
    let error = json!({"code": -32603, "message": "the upstream refused"});
    h.backend
        .fail(&failed_run.lease, &error)
        .await
        .expect("fail");
    let waiting = queued(h, &alice(), 1).await;
    let Some(all) = h
        .backend
        .records(&TaskFilter::default())
        .await
        .expect("records")
    else {
        return;
    };
    let find = |id: &str| {
        all.iter()
            .find(|record| record.id == id)
            .unwrap_or_else(|| panic!("task {id} is not listed: {all:?}"))
    };
    assert_eq!(all.len(), 4, "{all:?}");
    let shown = find(&waiting.id);
    assert_eq!(
        (
            shown.status,
            shown.queued,
            shown.worker.as_deref(),
            shown.attempt
        ),
        (TaskStatus::Working, true, None, 0)
    );
    assert_eq!(
        (shown.tool.as_str(), shown.version.as_deref()),
        (TOOL, Some("1.2.3"))
    );
    let shown = find(&held.id);
    assert_eq!(
        (
            shown.status,
            shown.queued,
            shown.worker.as_deref(),
            shown.attempt
        ),
        (TaskStatus::Working, false, Some(worker.as_str()), 1)
    );
    let lease_until = shown.lease_until_ms.expect("a held run shows its lease");
    assert!(
        lease_until + 1_000 >= wall_clock_ms(),
        "a lease in the future: {shown:?}"
    );
    assert_eq!(find(&done.id).status, TaskStatus::Completed);
    let shown = find(&failed.id);
    assert_eq!(
        (shown.status, shown.error.as_ref()),
        (TaskStatus::Failed, Some(&error))
    );
    for record in &all {
        assert!(
            record.expires_at_ms.is_some() && record.max_attempts == 1,
            "{record:?}"
        );
        let text = serde_json::to_string(record).expect("serialize");
        assert!(
            !text.contains("hello")
                && !text.contains("conformance\"")
                && !text.contains("secret result"),
            "an operator never sees arguments, context or results: {text}"
        );
    }
    let newest_first: Vec<u64> = all.iter().map(|record| record.created_at_ms).collect();
    assert!(
        newest_first.windows(2).all(|pair| pair[0] >= pair[1]),
        "{newest_first:?}"
    );

    let only = |filter: TaskFilter| async move {
        let mut ids: Vec<String> = h
            .backend
            .records(&filter)
            .await
            .expect("records")
            .expect("listing")
            .into_iter()
            .map(|record| record.id)
            .collect();
        ids.sort_unstable();
        ids
    };
    let mut working = vec![waiting.id.clone(), held.id.clone()];
    working.sort_unstable();
    let by_status = TaskFilter {
        status: Some(TaskStatus::Working),
        ..TaskFilter::default()
    };
    assert_eq!(only(by_status).await, working);
    let failures = TaskFilter {
        status: Some(TaskStatus::Failed),
        tool: Some(TOOL.into()),
        ..TaskFilter::default()
    };
    assert_eq!(only(failures).await, vec![failed.id.clone()]);
    let other_tool = TaskFilter {
        tool: Some("another".into()),
        ..TaskFilter::default()
    };
    assert!(only(other_tool).await.is_empty());
    let old = TaskFilter {
        older_than_ms: Some(3_600_000),
        ..TaskFilter::default()
    };
    assert!(only(old).await.is_empty());
    let recent = TaskFilter {
        newer_than_ms: Some(3_600_000),
        limit: 2,
        ..TaskFilter::default()
    };
    assert_eq!(only(recent).await.len(), 2);

    let one = h
        .other()
        .record(&held.id)
        .await
        .expect("record")
        .expect("the task");
    assert_eq!(&one, find(&held.id));
    assert_eq!(
        h.backend.record("no-such-task").await.expect("record"),
        None
    );
    if let Some(stats) = h.backend.stats().await.expect("stats") {
        assert_eq!(stats.ended, 2, "{stats:?}");
    }
}

/// An operator cancels a running task of any owner: it is `cancelled`, its worker is told
/// (event and heartbeat); again it has already ended; an unknown id is `None`.
pub async fn an_operators_cancel_reaches_the_worker_whoever_owns_the_task<B: TaskBackend>(
    h: &Harness<B>,
) {
    let owner = alice();
    let worker = WorkerId::new();
    let mut events = h.backend.events(&worker);
    let (task, run) = running(h, &owner, &worker, 1).await;
    let Ok(ack) = h.other().cancel_any(&task.id).await else {
        return;
    };
    assert_eq!(ack, Some(CancelAck::Cancelled));
    assert_eq!(
        view(h, &owner, &task.id).await.status,
        TaskStatus::Cancelled
    );
    if let Some(events) = events.as_mut() {
        expect_cancel_event(events, &task.id).await;
    }
    assert_eq!(heartbeat(h, &run.lease).await, CANCEL_REQUESTED);
    assert_eq!(
        h.backend.cancel_any(&task.id).await.expect("cancel_any"),
        Some(CancelAck::AlreadyTerminal)
    );
    assert_eq!(
        h.backend
            .cancel_any("no-such-task")
            .await
            .expect("cancel_any"),
        None
    );
    claim_none(h, "cancelled work is never claimed").await;
}

/// Workers' reports (when the backend keeps them) are listed with the store's time of the
/// last one; a report again replaces the last; a worker that leaves is gone; a recent
/// report is not forgotten.
pub async fn workers_report_themselves_and_leave<B: TaskBackend>(h: &Harness<B>) {
    let report = |id: &str, running: u32| WorkerPresence {
        id: id.to_owned(),
        host: "conformance-host".to_owned(),
        pid: 4242,
        started_at_ms: wall_clock_ms(),
        seen_at_ms: 0,
        running,
        capacity: 8,
    };
    let (a, b) = (WorkerId::new(), WorkerId::new());
    h.backend
        .worker_seen(&report(a.as_str(), 1))
        .await
        .expect("report");
    h.other()
        .worker_seen(&report(b.as_str(), 0))
        .await
        .expect("report");
    h.backend
        .worker_seen(&report(a.as_str(), 3))
        .await
        .expect("report");
    let Some((now, workers)) = h.backend.workers().await.expect("workers") else {
        return;
    };
    let mut ids: Vec<&str> = workers.iter().map(|w| w.id.as_str()).collect();
    ids.sort_unstable();
    let mut expected = vec![a.as_str(), b.as_str()];
    expected.sort_unstable();
    assert_eq!(ids, expected);
    let first = workers
        .iter()
        .find(|w| w.id == a.as_str())
        .expect("worker a");
    assert_eq!((first.running, first.capacity, first.pid), (3, 8, 4242));
    assert!(
        first.seen_at_ms > 0 && first.age_ms(now) < 60_000,
        "{first:?} at {now}"
    );
    assert_eq!(
        h.backend
            .forget_workers(Duration::from_secs(3600))
            .await
            .expect("forget"),
        0
    );
    h.backend.worker_gone(&a).await.expect("gone");
    let (_, left) = h
        .other()
        .workers()
        .await
        .expect("workers")
        .expect("listing");
    let left: Vec<&str> = left.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(left, vec![b.as_str()]);
}

// Cancellation

/// Cancelling queued work (released or not) makes it `cancelled`, and it is never claimed,
/// even if released later; a second cancel says `AlreadyTerminal`.
pub async fn cancel_of_queued_work_is_final<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let released = queued(h, &owner, 1).await;
    let unreleased = new_task(h, &owner, 1);
    submit(h, &unreleased).await;
    for task in [&released, &unreleased] {
        assert_eq!(
            cancel(h, &owner, &task.id).await,
            Some(CancelAck::Cancelled)
        );
        let shown = view(h, &owner, &task.id).await;
        assert_eq!(shown.status, TaskStatus::Cancelled);
        assert_eq!(shown.result, None);
        assert_eq!(
            cancel(h, &owner, &task.id).await,
            Some(CancelAck::AlreadyTerminal)
        );
    }
    release(h, &owner, &unreleased.id).await;
    claim_none(h, "cancelled work is never claimed").await;
}

/// Cancelling a running task (from another process when there is a peer) makes it
/// `cancelled` at once; its holder gets `WorkerEvent::Cancel` (when the backend has events)
/// and its heartbeat says `cancel_requested`; the holder's late result is refused
/// (`Terminal`).
pub async fn cancel_of_a_running_task_reaches_its_worker<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let worker = WorkerId::new();
    let mut events = h.backend.events(&worker);
    let (task, run) = running(h, &owner, &worker, 1).await;
    let ack = h.other().cancel(&owner, &task.id).await.expect("cancel");
    assert_eq!(ack, Some(CancelAck::Cancelled));
    let cancelled = view(h, &owner, &task.id).await;
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    if let Some(events) = events.as_mut() {
        expect_cancel_event(events, &task.id).await;
    }
    assert_eq!(heartbeat(h, &run.lease).await, CANCEL_REQUESTED);
    assert_writes(h, &run.lease, WriteAck::Terminal).await;
    let after = view(h, &owner, &task.id).await;
    assert_eq!(after.status, TaskStatus::Cancelled);
    assert_eq!(after.result, None, "the late result is dropped");
    assert_eq!(after.error, None);
    claim_none(h, "cancelled work is never claimed").await;
}

/// Cancelling a task waiting for input withdraws its requests; a later answer changes
/// nothing and runs nothing.
pub async fn cancel_of_a_task_waiting_for_input_withdraws_its_requests<B: TaskBackend>(
    h: &Harness<B>,
) {
    let owner = anon();
    let (task, _run, keys) = parked(h, &owner, 1, &["a"]).await;
    assert_eq!(
        cancel(h, &owner, &task.id).await,
        Some(CancelAck::Cancelled)
    );
    let cancelled = view(h, &owner, &task.id).await;
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    assert!(cancelled.input_requests.is_empty(), "requests withdrawn");
    assert_eq!(
        deliver(h, &owner, &task.id, client_answers(&keys, &["a"])).await,
        Some(UpdateAck::Ignored),
        "a late answer"
    );
    assert_eq!(
        view(h, &owner, &task.id).await,
        cancelled,
        "nothing changed"
    );
    release(h, &owner, &task.id).await;
    claim_none(h, "a cancelled task never runs again").await;
}

/// Cancelling a completed, failed or cancelled task says `AlreadyTerminal` and changes
/// nothing: the payload stays.
pub async fn cancel_of_a_terminal_task_changes_nothing<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let (completed, run) = running(h, &owner, &WorkerId::new(), 1).await;
    let ack = h
        .backend
        .complete(&run.lease, &json!({"ok": true}))
        .await
        .expect("complete");
    assert_eq!(ack, WriteAck::Recorded);
    let (failed, run) = running(h, &owner, &WorkerId::new(), 1).await;
    let ack = h
        .backend
        .fail(&run.lease, &json!({"code": -32603, "message": "no"}))
        .await
        .expect("fail");
    assert_eq!(ack, WriteAck::Recorded);
    let cancelled = queued(h, &owner, 1).await;
    assert_eq!(
        cancel(h, &owner, &cancelled.id).await,
        Some(CancelAck::Cancelled)
    );
    for task in [&completed, &failed, &cancelled] {
        let before = view(h, &owner, &task.id).await;
        assert_eq!(
            cancel(h, &owner, &task.id).await,
            Some(CancelAck::AlreadyTerminal),
            "{:?}",
            before.status
        );
        assert_eq!(
            view(h, &owner, &task.id).await,
            before,
            "{:?}",
            before.status
        );
    }
}

/// An answer racing a cancel: whichever lands first, the task ends `cancelled` with
/// nothing runnable; a run claimed in between (then the answer won) is told to stop and
/// cannot record anything. Never a run after a recorded cancel.
pub async fn input_racing_cancel_never_runs_after_the_cancel<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    for _ in 0..16 {
        let (task, _run, keys) = parked(h, &owner, 1, &["q"]).await;
        let barrier = Arc::new(Barrier::new(3));
        let updater = tokio::spawn({
            let (backend, barrier) = (Arc::clone(&h.backend), Arc::clone(&barrier));
            let (owner, id, answers) = (
                owner.clone(),
                task.id.clone(),
                client_answers(&keys, &["q"]),
            );
            async move {
                barrier.wait().await;
                backend.deliver_input(&owner, &id, answers).await
            }
        });
        let canceller = tokio::spawn({
            let (backend, barrier) = (Arc::clone(h.other()), Arc::clone(&barrier));
            let (owner, id) = (owner.clone(), task.id.clone());
            async move {
                barrier.wait().await;
                backend.cancel(&owner, &id).await
            }
        });
        let claimer = tokio::spawn({
            let (backend, barrier) = (Arc::clone(&h.backend), Arc::clone(&barrier));
            async move {
                barrier.wait().await;
                backend.claim(&WorkerId::new(), 1, Duration::ZERO).await
            }
        });
        let updated = join(updater.await).expect("deliver_input");
        let cancelled = join(canceller.await).expect("cancel");
        let claimed = join(claimer.await).expect("claim");
        assert_eq!(
            cancelled,
            Some(CancelAck::Cancelled),
            "nothing else ends the task"
        );
        assert!(
            matches!(updated, Some(UpdateAck::Resumed | UpdateAck::Ignored)),
            "the answer either resumed or came too late: {updated:?}"
        );
        let end = view(h, &owner, &task.id).await;
        assert_eq!(end.status, TaskStatus::Cancelled);
        assert!(end.input_requests.is_empty());
        claim_none(h, "no run after a recorded cancel").await;
        if let Some(run) = claimed.first() {
            assert_eq!(updated, Some(UpdateAck::Resumed), "a run needs the answer");
            assert_eq!(run.round, 2);
            assert_eq!(heartbeat(h, &run.lease).await, CANCEL_REQUESTED);
            assert_writes(h, &run.lease, WriteAck::Terminal).await;
        }
        let end_after = view(h, &owner, &task.id).await;
        assert_eq!(end_after.status, TaskStatus::Cancelled);
        assert_eq!(end_after.result, None);
    }
}

/// A worker's result racing a cancel (from another process when there is a peer): exactly
/// one of them takes effect. Either the result is recorded (and the cancel finds the task
/// terminal) or the cancel is (and the result is refused as `Terminal`); the task shows
/// that outcome and nothing of the other.
pub async fn complete_racing_cancel_records_one_outcome<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    for _ in 0..16 {
        let (task, run) = running(h, &owner, &WorkerId::new(), 1).await;
        let barrier = Arc::new(Barrier::new(2));
        let completer = tokio::spawn({
            let (backend, barrier, lease) = (
                Arc::clone(&h.backend),
                Arc::clone(&barrier),
                run.lease.clone(),
            );
            async move {
                barrier.wait().await;
                backend.complete(&lease, &json!({"won": "complete"})).await
            }
        });
        let canceller = tokio::spawn({
            let (backend, barrier) = (Arc::clone(h.other()), Arc::clone(&barrier));
            let (owner, id) = (owner.clone(), task.id.clone());
            async move {
                barrier.wait().await;
                backend.cancel(&owner, &id).await
            }
        });
        let completed = join(completer.await).expect("complete");
        let cancelled = join(canceller.await).expect("cancel");
        let end = view(h, &owner, &task.id).await;
        match (completed, cancelled) {
            (WriteAck::Recorded, Some(CancelAck::AlreadyTerminal)) => {
                assert_eq!(end.status, TaskStatus::Completed);
                assert_eq!(end.result, Some(json!({"won": "complete"})));
            }
            (WriteAck::Terminal, Some(CancelAck::Cancelled)) => {
                assert_eq!(end.status, TaskStatus::Cancelled);
                assert_eq!(end.result, None, "the refused result is not kept");
            }
            other => panic!("exactly one of complete and cancel takes effect, got {other:?}"),
        }
        claim_none(h, "an ended task has no work").await;
    }
}

// ---------------------------------------------------------------------------------------------
// Housekeeping and changes

/// `expire` on an idle store asks to be called again after a positive duration of at most
/// a second, and so it does with work queued and running.
pub async fn expire_when_idle_asks_again_within_a_second<B: TaskBackend>(h: &Harness<B>) {
    let check = |next: Duration, when: &str| {
        assert!(
            next > Duration::ZERO && next <= Duration::from_secs(1),
            "expire ({when}) returned {next:?}, expected within (0, 1 s]"
        );
    };
    check(expire(h).await, "empty");
    let owner = anon();
    running(h, &owner, &WorkerId::new(), 1).await;
    queued(h, &owner, 1).await;
    check(expire(h).await, "with work running and queued");
}

/// When the backend publishes changes, every visible change of a watched task publishes its
/// id: `request_input`, a partial and a last answer, a status message, `complete`, `fail`,
/// a hand-back that fails it, and cancelling a queued, a running and a waiting task.
/// (Submitting and releasing need not publish.)
pub async fn changes_report_every_state_change<B: TaskBackend>(h: &Harness<B>) {
    let Some(mut changes) = h.backend.changes() else {
        return;
    };
    let owner = anon();

    let (task, run) = running(h, &owner, &WorkerId::new(), 1).await;
    watch(h, &owner, &task.id).await;
    drain(&mut changes);
    h.backend
        .set_status_message(&run.lease, "halfway".to_owned())
        .await
        .expect("set_status_message");
    expect_change(&mut changes, &task.id, "a status message").await;
    drain(&mut changes);
    let keys = park(h, &owner, &run, &["a", "b"], "s").await;
    expect_change(&mut changes, &task.id, "request_input").await;
    drain(&mut changes);
    deliver(h, &owner, &task.id, client_answers(&keys, &["a"])).await;
    expect_change(&mut changes, &task.id, "a partial answer").await;
    drain(&mut changes);
    deliver(h, &owner, &task.id, client_answers(&keys, &["b"])).await;
    expect_change(&mut changes, &task.id, "the last answer").await;
    let run = claim_one(h, &WorkerId::new()).await;
    drain(&mut changes);
    h.backend
        .complete(&run.lease, &json!({}))
        .await
        .expect("complete");
    expect_change(&mut changes, &task.id, "complete").await;

    let (task, run) = running(h, &owner, &WorkerId::new(), 1).await;
    watch(h, &owner, &task.id).await;
    drain(&mut changes);
    h.backend
        .fail(&run.lease, &json!({"code": -32603, "message": "x"}))
        .await
        .expect("fail");
    expect_change(&mut changes, &task.id, "fail").await;

    let (task, run) = running(h, &owner, &WorkerId::new(), 1).await;
    watch(h, &owner, &task.id).await;
    drain(&mut changes);
    h.backend.hand_back(&run.lease).await.expect("hand_back");
    expect_change(&mut changes, &task.id, "a hand-back that fails the task").await;

    let task = queued(h, &owner, 1).await;
    watch(h, &owner, &task.id).await;
    drain(&mut changes);
    cancel(h, &owner, &task.id).await;
    expect_change(&mut changes, &task.id, "cancelling a queued task").await;

    let (task, _run) = running(h, &owner, &WorkerId::new(), 1).await;
    watch(h, &owner, &task.id).await;
    drain(&mut changes);
    cancel(h, &owner, &task.id).await;
    expect_change(&mut changes, &task.id, "cancelling a running task").await;

    let (task, _run, _keys) = parked(h, &owner, 1, &["a"]).await;
    watch(h, &owner, &task.id).await;
    drain(&mut changes);
    cancel(h, &owner, &task.id).await;
    expect_change(&mut changes, &task.id, "cancelling a waiting task").await;
}

/// `watch` answers whether the owner has the task: `false` for a missing task and for
/// another owner's (which it must not reveal), `true` for the owner's own.
pub async fn watch_sees_only_the_owners_tasks<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let task = queued(h, &owner, 1).await;
    let other = bob();
    assert!(
        !h.backend
            .watch(&owner, "no-such-task")
            .await
            .expect("watch"),
        "a missing task"
    );
    assert!(
        !h.backend.watch(&other, &task.id).await.expect("watch"),
        "another owner's task"
    );
    assert!(
        h.backend.watch(&owner, &task.id).await.expect("watch"),
        "the owner's task"
    );
}

async fn watch<B: TaskBackend>(h: &Harness<B>, owner: &Owner, id: &str) {
    assert!(
        h.backend.watch(owner, id).await.expect("watch"),
        "the owner watches its task {id}"
    );
}

/// A run handed back by its worker (stopping with the run still going) follows the
/// lost-worker policy at once, without waiting for its lease: another start when attempts
/// are left (the old lease is then fenced out), else `failed` with [`LOST_WORKER_MESSAGE`].
/// A stale, ended or missing run cannot be handed back (`Lost`, `Terminal`, `Gone`).
pub async fn a_run_handed_back_follows_the_lost_worker_policy_at_once<B: TaskBackend>(
    h: &Harness<B>,
) {
    let owner = anon();
    let (task, first) = running(h, &owner, &WorkerId::new(), 2).await;
    let ack = h.backend.hand_back(&first.lease).await.expect("hand_back");
    assert_eq!(ack, WriteAck::Recorded, "the holder hands its run back");
    let again = claim_one(h, &WorkerId::new()).await;
    assert_eq!(again.lease.task, task.id);
    assert_eq!(again.attempt, 2, "another start");
    assert_eq!(heartbeat(h, &first.lease).await, LeaseState::Lost);
    assert_writes(h, &first.lease, WriteAck::Lost).await;
    let stale = h.backend.hand_back(&first.lease).await.expect("hand_back");
    assert_eq!(stale, WriteAck::Lost, "a stale lease cannot hand back");

    let ack = h.backend.hand_back(&again.lease).await.expect("hand_back");
    assert_eq!(ack, WriteAck::Recorded);
    let failed = view(h, &owner, &task.id).await;
    assert_eq!(failed.status, TaskStatus::Failed, "no attempt left");
    assert_eq!(failed.status_message.as_deref(), Some(LOST_WORKER_MESSAGE));
    let error = failed.error.expect("a JSON-RPC error");
    assert_eq!(error["code"], json!(-32603));
    assert_eq!(error["message"], json!(LOST_WORKER_MESSAGE));
    claim_none(h, "a failed task has no work").await;
    let ended = h.backend.hand_back(&again.lease).await.expect("hand_back");
    assert_eq!(ended, WriteAck::Terminal);
    let missing = Lease {
        task: ferrymcp_tasks::new_task_id(),
        ..again.lease.clone()
    };
    let gone = h.backend.hand_back(&missing).await.expect("hand_back");
    assert_eq!(gone, WriteAck::Gone);
}

// ---------------------------------------------------------------------------------------------
// Clock cases: leases, TTLs, waits

/// A claim with nothing to claim returns empty, at the end of its wait (half a lease), not
/// before.
pub async fn claim_without_work_returns_empty_after_its_wait<B: TaskBackend>(h: &Harness<B>) {
    let wait = h.lease / 2;
    let began = Instant::now();
    let claimed = timeout(wait + PATIENCE, h.backend.claim(&WorkerId::new(), 4, wait))
        .await
        .expect("the claim returns after its wait")
        .expect("claim");
    assert!(claimed.is_empty());
    let waited = began.elapsed();
    assert!(
        waited + h.slack() >= wait,
        "returned after {waited:?}, before its wait of {wait:?}"
    );
}

/// A lease lapses one lease after the last claim or heartbeat (not before); `expire` then
/// hands the run to another worker (`max_attempts` > 1: attempt 2, a new fence). The old
/// holder is fenced out: its heartbeat says `Lost` and its writes are `Lost`; the new
/// holder's result is recorded.
pub async fn a_lapsed_lease_is_redelivered_and_fences_out_the_old_worker<B: TaskBackend>(
    h: &Harness<B>,
) {
    let owner = anon();
    let (task, first) = running(h, &owner, &WorkerId::new(), 3).await;
    let_pass(h.lease - h.slack()).await;
    expire(h).await;
    claim_none(h, "the lease has not lapsed yet").await;
    let_pass(h.slack() * 2).await;
    expire(h).await;
    let second = claim_one(h, &WorkerId::new()).await;
    assert_eq!(second.lease.task, task.id);
    assert_eq!(second.attempt, 2, "the second start");
    assert_eq!(second.round, 1);
    assert_ne!(second.lease.fence, first.lease.fence, "a new fence");
    assert_eq!(second.arguments, task.arguments);
    assert_eq!(heartbeat(h, &first.lease).await, LeaseState::Lost);
    assert_writes(h, &first.lease, WriteAck::Lost).await;
    assert_eq!(view(h, &owner, &task.id).await.status, TaskStatus::Working);
    assert_eq!(heartbeat(h, &second.lease).await, HELD);
    let ack = h
        .backend
        .complete(&second.lease, &json!({"ok": true}))
        .await
        .expect("complete");
    assert_eq!(ack, WriteAck::Recorded);
    let done = view(h, &owner, &task.id).await;
    assert_eq!(done.result, Some(json!({"ok": true})));
    assert_writes(h, &first.lease, WriteAck::Terminal).await;
    assert_eq!(
        view(h, &owner, &task.id).await,
        done,
        "the zombie changed nothing"
    );
}

/// With no attempt left (`max_attempts` 1), a lapsed lease fails the task with
/// [`LOST_WORKER_MESSAGE`] (-32603, also the status message); the zombie's result is
/// refused (`Terminal`) and its heartbeat says `Gone`.
pub async fn a_lapsed_lease_fails_a_task_without_retries<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let (task, run) = running(h, &owner, &WorkerId::new(), 1).await;
    let_pass(h.lease + h.slack()).await;
    expire(h).await;
    let failed = view(h, &owner, &task.id).await;
    assert_eq!(failed.status, TaskStatus::Failed);
    let error = failed.error.clone().expect("a JSON-RPC error");
    assert_eq!(error["code"], json!(-32603));
    assert_eq!(error["message"], json!(LOST_WORKER_MESSAGE));
    assert_eq!(failed.status_message.as_deref(), Some(LOST_WORKER_MESSAGE));
    claim_none(h, "no attempt left").await;
    assert_writes(h, &run.lease, WriteAck::Terminal).await;
    assert_eq!(heartbeat(h, &run.lease).await, LeaseState::Gone);
    assert_eq!(view(h, &owner, &task.id).await, failed);
}

/// A worker lost in a later input round is replaced like one lost in the first: the round
/// is redelivered (`max_attempts` 2) with the same answers and request state, and its new
/// input keys are fresh too.
pub async fn a_lost_worker_in_a_later_round_is_redelivered<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let (task, _first, keys) = parked(h, &owner, 2, &["q"]).await;
    let ack = deliver(h, &owner, &task.id, client_answers(&keys, &["q"])).await;
    assert_eq!(ack, Some(UpdateAck::Resumed));
    let lost = claim_one(h, &WorkerId::new()).await;
    assert_eq!(lost.round, 2);
    let_pass(h.lease + h.slack()).await;
    expire(h).await;
    let shown = view(h, &owner, &task.id).await;
    assert_eq!(
        (shown.status, shown.error.as_ref()),
        (TaskStatus::Working, None),
        "the first start of round 2 was lost, an attempt is left: redeliver, not fail \
         (round 2's run reported attempt {})",
        lost.attempt
    );
    let again = claim_one(h, &WorkerId::new()).await;
    assert_eq!(again.round, 2);
    assert_eq!(again.attempt, lost.attempt + 1);
    assert_eq!(again.responses, Some(tool_answers(&["q"])));
    assert_eq!(again.request_state.as_deref(), Some("state-1"));
    assert_writes(h, &lost.lease, WriteAck::Lost).await;
    let fresh = park(h, &owner, &again, &["q"], "state-2").await;
    assert_ne!(fresh["q"], keys["q"], "fresh keys after a redelivery");
}

/// Heartbeats keep a lease alive across several lease periods; without them it lapses
/// one lease after the last.
pub async fn heartbeats_keep_a_lease_alive<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let (task, run) = running(h, &owner, &WorkerId::new(), 1).await;
    for _ in 0..4 {
        let_pass(h.lease * 2 / 3).await;
        assert_eq!(heartbeat(h, &run.lease).await, HELD);
        expire(h).await;
        claim_none(h, "the lease is renewed").await;
        assert_eq!(view(h, &owner, &task.id).await.status, TaskStatus::Working);
    }
    let_pass(h.lease - h.slack()).await;
    expire(h).await;
    assert_eq!(heartbeat(h, &run.lease).await, HELD, "not lapsed yet");
    let_pass(h.lease + h.slack()).await;
    expire(h).await;
    assert_eq!(view(h, &owner, &task.id).await.status, TaskStatus::Failed);
    assert_eq!(heartbeat(h, &run.lease).await, LeaseState::Gone);
}

/// A task is kept until `created + ttl` and is unknown after (`expire` run): `get`,
/// `deliver_input` and `cancel` find nothing and its queued work is gone. A task without
/// TTL stays.
pub async fn a_task_is_kept_until_its_ttl_and_unknown_after<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let ttl = h.lease * 2;
    let mut task = new_task(h, &owner, 1);
    task.ttl = Some(ttl);
    let mut forever = new_task(h, &owner, 1);
    forever.ttl = None;
    submit(h, &forever).await;
    submit(h, &task).await;
    let_pass(ttl - h.slack()).await;
    expire(h).await;
    assert!(
        get(h, &owner, &task.id).await.is_some(),
        "kept until its TTL"
    );
    let_pass(h.slack() * 2).await;
    expire(h).await;
    assert_eq!(
        get(h, &owner, &task.id).await,
        None,
        "unknown after its TTL"
    );
    assert_eq!(
        deliver(h, &owner, &task.id, InputResponses::new()).await,
        None
    );
    assert_eq!(cancel(h, &owner, &task.id).await, None);
    release(h, &owner, &task.id).await;
    // `forever` was never released, and a store may release such a task itself after a
    // while (its server died): only the expired task must not run.
    let claimed = h
        .backend
        .claim(&WorkerId::new(), 16, Duration::ZERO)
        .await
        .expect("claim");
    assert!(
        claimed.iter().all(|run| run.lease.task != task.id),
        "an expired task has no work"
    );
    assert!(
        get(h, &owner, &forever.id).await.is_some(),
        "no TTL, no expiry"
    );
}

/// A running task past its TTL is gone for its worker: heartbeat and writes say `Gone`
/// (an event, if any, is a `Cancel`).
pub async fn an_expired_running_task_is_gone_for_its_worker<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let worker = WorkerId::new();
    let mut events = h.backend.events(&worker);
    let mut task = new_task(h, &owner, 1);
    task.ttl = Some(h.lease / 2);
    submit(h, &task).await;
    release(h, &owner, &task.id).await;
    let run = claim_one(h, &worker).await;
    let_pass(h.lease / 2 + h.slack()).await;
    expire(h).await;
    assert_eq!(get(h, &owner, &task.id).await, None);
    assert_eq!(heartbeat(h, &run.lease).await, LeaseState::Gone);
    assert_writes(h, &run.lease, WriteAck::Gone).await;
    if let Some(events) = events.as_mut() {
        while let Ok(event) = events.try_recv() {
            assert_eq!(event, WorkerEvent::Cancel(task.id.clone()));
        }
    }
}

/// When the backend publishes changes, a task failed for a lost worker publishes its id.
pub async fn changes_report_a_lost_worker<B: TaskBackend>(h: &Harness<B>) {
    let Some(mut changes) = h.backend.changes() else {
        return;
    };
    let owner = anon();
    let (task, _run) = running(h, &owner, &WorkerId::new(), 1).await;
    watch(h, &owner, &task.id).await;
    drain(&mut changes);
    let_pass(h.lease + h.slack()).await;
    expire(h).await;
    assert_eq!(view(h, &owner, &task.id).await.status, TaskStatus::Failed);
    expect_change(&mut changes, &task.id, "failing a task for a lost worker").await;
}

// ---------------------------------------------------------------------------------------------
// Limits and fairness

/// An anonymous task submitted by the client that declared `name` (its caller key is
/// `anon:<name>`, as `ferrymcp_tasks::backend::caller_key` makes it).
fn task_of<B>(h: &Harness<B>, name: &str) -> NewTask {
    let mut task = new_task(h, &anon(), 1);
    task.caller = format!("anon:{name}");
    task
}

/// Submits `task`, which must be refused by `limit` at `max`, and checks that nothing was
/// stored: the id is unknown, and releasing it queues nothing.
async fn assert_refused<B: TaskBackend>(h: &Harness<B>, task: &NewTask, limit: Limit, max: u64) {
    match h.backend.submit(task.clone()).await {
        Err(BackendError::Limit(refusal)) => {
            assert_eq!(
                refusal,
                LimitExceeded { limit, max },
                "the refusal names its limit"
            );
        }
        Err(other) => panic!(
            "submit {} should hit {limit:?}, failed with: {other}",
            task.id
        ),
        Ok(view) => panic!("submit {} should hit {limit:?}, created {view:?}", task.id),
    }
    assert_eq!(
        get(h, &task.owner, &task.id).await,
        None,
        "a refused submission stores nothing"
    );
    release(h, &task.owner, &task.id).await;
}

/// A caller with `max_tasks_per_caller` unfinished tasks (queued, running or waiting for
/// input) is refused another with [`Limit::TasksPerCaller`]: nothing is stored, and another
/// caller still submits. A refusal takes no slot.
pub async fn a_caller_over_its_quota_is_refused_and_nothing_is_stored<B: TaskBackend>(
    h: &Harness<B>,
) {
    let h = h.limited(TaskLimits::unlimited().with_max_tasks_per_caller(3));
    let owner = anon();
    let queued = task_of(&h, "a");
    submit(&h, &queued).await;
    release(&h, &owner, &queued.id).await;
    let running = task_of(&h, "a");
    submit(&h, &running).await;
    release(&h, &owner, &running.id).await;
    let first = claim_one(&h, &WorkerId::new()).await;
    let second = claim_one(&h, &WorkerId::new()).await;
    park(&h, &owner, &second, &["q"], "state").await;
    let unreleased = task_of(&h, "a");
    submit(&h, &unreleased).await;
    for _ in 0..2 {
        assert_refused(&h, &task_of(&h, "a"), Limit::TasksPerCaller, 3).await;
    }
    claim_none(&h, "refused submissions queue nothing").await;
    let other = task_of(&h, "b");
    submit(&h, &other).await;
    let ack = h
        .backend
        .complete(&first.lease, &json!({"content": [], "isError": false}))
        .await
        .expect("complete");
    assert_eq!(ack, WriteAck::Recorded);
    submit(&h, &task_of(&h, "a")).await;
    assert_refused(&h, &task_of(&h, "a"), Limit::TasksPerCaller, 3).await;
}

/// `max_tasks` bounds the unfinished tasks of every caller together ([`Limit::Tasks`]).
pub async fn the_task_limit_refuses_every_caller<B: TaskBackend>(h: &Harness<B>) {
    let h = h.limited(TaskLimits::unlimited().with_max_tasks(2));
    submit(&h, &task_of(&h, "a")).await;
    submit(&h, &task_of(&h, "b")).await;
    assert_refused(&h, &task_of(&h, "c"), Limit::Tasks, 2).await;
    assert_refused(&h, &task_of(&h, "a"), Limit::Tasks, 2).await;
}

/// `max_kept` counts every task kept, finished or not ([`Limit::Kept`]): completing or
/// cancelling one frees no room.
pub async fn the_kept_limit_counts_finished_tasks<B: TaskBackend>(h: &Harness<B>) {
    let h = h.limited(TaskLimits::unlimited().with_max_kept(2));
    let owner = anon();
    let (_, run) = running(&h, &owner, &WorkerId::new(), 1).await;
    let ack = h
        .backend
        .complete(&run.lease, &json!({"content": [], "isError": false}))
        .await
        .expect("complete");
    assert_eq!(ack, WriteAck::Recorded);
    let second = task_of(&h, "b");
    submit(&h, &second).await;
    assert_eq!(
        cancel(&h, &owner, &second.id).await,
        Some(CancelAck::Cancelled)
    );
    assert_refused(&h, &task_of(&h, "c"), Limit::Kept, 2).await;
}

/// Arguments whose compact JSON is over `max_argument_bytes` are refused
/// ([`Limit::ArgumentBytes`]); exactly at the limit they are kept.
pub async fn arguments_over_the_limit_are_refused<B: TaskBackend>(h: &Harness<B>) {
    let mut task = task_of(h, "a");
    task.arguments = object(json!({"text": "x".repeat(500), "n": [1, 2, 3]}));
    let size = serde_json::to_string(&task.arguments)
        .expect("arguments serialize")
        .len();
    let exact = h.limited(TaskLimits::unlimited().with_max_argument_bytes(size));
    let kept = exact
        .backend
        .submit(task.clone())
        .await
        .expect("at the limit");
    assert_eq!(kept.status, TaskStatus::Working);
    release(&exact, &task.owner, &task.id).await;
    let run = claim_one(&exact, &WorkerId::new()).await;
    assert_eq!(run.arguments, task.arguments, "kept whole");

    let under = h.limited(TaskLimits::unlimited().with_max_argument_bytes(size - 1));
    let max = u64::try_from(size - 1).expect("a small size");
    assert_refused(&under, &task, Limit::ArgumentBytes, max).await;
}

/// A `complete` or `fail` whose JSON is over `max_result_bytes` fails the task with a
/// `-32000` error naming [`Limit::ResultBytes`] (its data `{"limit": setting, "max": n}`)
/// instead of keeping it; exactly at the limit the result is kept.
pub async fn a_result_over_the_limit_fails_the_task_naming_the_limit<B: TaskBackend>(
    h: &Harness<B>,
) {
    let result = json!({"content": [{"type": "text", "text": "y".repeat(400)}], "isError": false});
    let size = serde_json::to_string(&result)
        .expect("result serializes")
        .len();
    let owner = anon();
    let exact = h.limited(TaskLimits::unlimited().with_max_result_bytes(size));
    let (task, run) = running(&exact, &owner, &WorkerId::new(), 1).await;
    let ack = exact
        .backend
        .complete(&run.lease, &result)
        .await
        .expect("complete");
    assert_eq!(ack, WriteAck::Recorded);
    let done = view(&exact, &owner, &task.id).await;
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.result, Some(result.clone()), "kept at the limit");

    let max = size - 1;
    let refusal = LimitExceeded {
        limit: Limit::ResultBytes,
        max: u64::try_from(max).expect("a small size"),
    };
    let expected = json!({
        "code": LIMIT_CODE,
        "message": refusal.to_string(),
        "data": {"limit": Limit::ResultBytes.setting(), "max": max},
    });
    let under = h.limited(TaskLimits::unlimited().with_max_result_bytes(max));
    let (task, run) = running(&under, &owner, &WorkerId::new(), 1).await;
    let ack = under
        .backend
        .complete(&run.lease, &result)
        .await
        .expect("complete");
    assert_eq!(ack, WriteAck::Recorded, "the task's end is recorded");
    let failed = view(&under, &owner, &task.id).await;
    assert_eq!(failed.status, TaskStatus::Failed, "a result over the limit");
    assert_eq!(failed.result, None, "the result is not kept");
    assert_eq!(failed.error, Some(expected.clone()));
    assert_eq!(failed.status_message, Some(refusal.to_string()));

    let (task, run) = running(&under, &owner, &WorkerId::new(), 1).await;
    let error = json!({"code": -32603, "message": "z".repeat(max)});
    let ack = under.backend.fail(&run.lease, &error).await.expect("fail");
    assert_eq!(ack, WriteAck::Recorded);
    let failed = view(&under, &owner, &task.id).await;
    assert_eq!(failed.status, TaskStatus::Failed);
    assert_eq!(failed.error, Some(expected), "an error over the limit");
}

/// A caller's task that ends (completed, failed, cancelled, handed back with no attempt
/// left) frees its slot at once.
pub async fn a_finished_task_frees_its_callers_slot<B: TaskBackend>(h: &Harness<B>) {
    let h = h.limited(TaskLimits::unlimited().with_max_tasks_per_caller(1));
    let owner = anon();
    for end in [
        "complete",
        "fail",
        "cancel",
        "hand_back",
        "cancel while waiting",
    ] {
        let task = task_of(&h, "a");
        submit(&h, &task).await;
        release(&h, &owner, &task.id).await;
        let run = claim_one(&h, &WorkerId::new()).await;
        assert_refused(&h, &task_of(&h, "a"), Limit::TasksPerCaller, 1).await;
        let lease = &run.lease;
        match end {
            "complete" => {
                let result = json!({"content": [], "isError": false});
                let ack = h.backend.complete(lease, &result).await.expect("complete");
                assert_eq!(ack, WriteAck::Recorded);
            }
            "fail" => {
                let error = json!({"code": -32603, "message": "no"});
                let ack = h.backend.fail(lease, &error).await.expect("fail");
                assert_eq!(ack, WriteAck::Recorded);
            }
            "cancel" => {
                assert_eq!(
                    cancel(&h, &owner, &task.id).await,
                    Some(CancelAck::Cancelled)
                );
            }
            "hand_back" => {
                let ack = h.backend.hand_back(lease).await.expect("hand_back");
                assert_eq!(ack, WriteAck::Recorded);
                assert_eq!(view(&h, &owner, &task.id).await.status, TaskStatus::Failed);
            }
            _ => {
                park(&h, &owner, &run, &["q"], "state").await;
                assert_refused(&h, &task_of(&h, "a"), Limit::TasksPerCaller, 1).await;
                assert_eq!(
                    cancel(&h, &owner, &task.id).await,
                    Some(CancelAck::Cancelled)
                );
            }
        }
        assert!(
            view(&h, &owner, &task.id).await.status.is_terminal(),
            "{end} ends the task"
        );
    }
    submit(&h, &task_of(&h, "a")).await;
}

/// Workers take runs fairly across callers: caller A queues 50 runs, then caller B queues
/// 3; claimed one at a time, B's `i`-th run (from 0) is among the first `2 + 2i` claims,
/// not behind A's 50.
pub async fn claims_are_fair_across_callers<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let mut flood = BTreeSet::new();
    for _ in 0..50 {
        let task = task_of(h, "a");
        submit(h, &task).await;
        release(h, &owner, &task.id).await;
        flood.insert(task.id);
    }
    let mut quick = Vec::new();
    for _ in 0..3 {
        let task = task_of(h, "b");
        submit(h, &task).await;
        release(h, &owner, &task.id).await;
        quick.push(task.id);
    }
    let worker = WorkerId::new();
    let mut order = Vec::new();
    for _ in 0..53 {
        order.push(claim_one(h, &worker).await.lease.task);
    }
    for (i, id) in quick.iter().enumerate() {
        let at = order
            .iter()
            .position(|claimed| claimed == id)
            .unwrap_or_else(|| panic!("B's run {i} was never claimed"));
        assert!(
            at < 2 + 2 * i,
            "B's run {i} was claim {} of {}; at most {} expected (fair across callers)",
            at + 1,
            order.len(),
            2 + 2 * i
        );
    }
    let claimed: BTreeSet<_> = order.iter().cloned().collect();
    assert_eq!(claimed.len(), 53, "every run claimed once");
    assert!(flood.is_subset(&claimed));
}

/// A resumed input round and a re-run after a lost worker queue fairly too: while caller A
/// has 10 runs queued, caller B's resumed round and handed-back run are among the first 4
/// claims.
pub async fn resumed_rounds_and_reruns_queue_fairly<B: TaskBackend>(h: &Harness<B>) {
    let owner = anon();
    let mut rerun = task_of(h, "b");
    rerun.max_attempts = 2;
    submit(h, &rerun).await;
    release(h, &owner, &rerun.id).await;
    let first = claim_one(h, &WorkerId::new()).await;
    assert_eq!(first.lease.task, rerun.id);
    let waiting = task_of(h, "b");
    submit(h, &waiting).await;
    release(h, &owner, &waiting.id).await;
    let parked_run = claim_one(h, &WorkerId::new()).await;
    let keys = park(h, &owner, &parked_run, &["q"], "state").await;
    for _ in 0..10 {
        let task = task_of(h, "a");
        submit(h, &task).await;
        release(h, &owner, &task.id).await;
    }
    assert_eq!(
        deliver(h, &owner, &waiting.id, client_answers(&keys, &["q"])).await,
        Some(UpdateAck::Resumed)
    );
    let ack = h.backend.hand_back(&first.lease).await.expect("hand_back");
    assert_eq!(ack, WriteAck::Recorded);
    let worker = WorkerId::new();
    let mut order = Vec::new();
    for _ in 0..12 {
        order.push(claim_one(h, &worker).await.lease.task);
    }
    for id in [&waiting.id, &rerun.id] {
        let at = order
            .iter()
            .position(|claimed| claimed == id)
            .unwrap_or_else(|| panic!("B's run of {id} was never claimed"));
        assert!(
            at < 4,
            "B's run of {id} was claim {} of {}; among the first 4 expected",
            at + 1,
            order.len()
        );
    }
}

/// A task past its TTL frees its room: its caller's slot and its place among the kept.
pub async fn an_expired_task_frees_its_slots<B: TaskBackend>(h: &Harness<B>) {
    let h = h.limited(
        TaskLimits::unlimited()
            .with_max_tasks_per_caller(1)
            .with_max_kept(2),
    );
    let owner = anon();
    let ttl = h.lease;
    let mut unfinished = task_of(&h, "a");
    unfinished.ttl = Some(ttl);
    submit(&h, &unfinished).await;
    let mut finished = task_of(&h, "b");
    finished.ttl = Some(ttl);
    submit(&h, &finished).await;
    release(&h, &owner, &finished.id).await;
    let run = claim_one(&h, &WorkerId::new()).await;
    let ack = h
        .backend
        .complete(&run.lease, &json!({"content": [], "isError": false}))
        .await
        .expect("complete");
    assert_eq!(ack, WriteAck::Recorded);
    assert_refused(&h, &task_of(&h, "c"), Limit::Kept, 2).await;
    let_pass(ttl + h.slack()).await;
    expire(&h).await;
    assert_eq!(get(&h, &owner, &unfinished.id).await, None, "expired");
    submit(&h, &task_of(&h, "a")).await;
    submit(&h, &task_of(&h, "c")).await;
    assert_refused(&h, &task_of(&h, "d"), Limit::Kept, 2).await;
}
