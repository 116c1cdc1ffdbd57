//! Credentials at rest on [`RedisBackend`]: with a key, the stored context (the caller's
//! principal) is sealed and bound to its task's owner, tool, version and arguments, and the
//! owner is stored only as a keyed tag; a worker with the key gets the caller back; a worker
//! without it, or with another key, or a context that was replaced, swapped under other
//! fields or left unsealed, fails the task instead of running it (R55). A key rotation
//! (`new,old`) keeps older tasks readable, findable and cancellable.
//!
//! Needs the `redis` feature: `cargo test -p ferrymcp-tasks --features redis --test suite redis_sealing::`.

use std::time::Duration;

use base64::Engine as _;
use ferrymcp_core::auth::Principal;
use ferrymcp_tasks::{
    TaskSnapshot,
    backend::{
        CancelAck, NewTask, Owner, TaskBackend, WorkerId,
        redis::{RedisBackend, RedisOptions},
    },
    sealing::{self, Sealer},
};
use ferrymcp_test_helpers::redis::RedisServer;
use ferrymcp_types::TaskStatus;
use serde_json::{Value, json};

const KEY: [u8; 32] = [7; 32];
const NEW_KEY: [u8; 32] = [8; 32];

async fn backend(url: &str, sealer: Option<Sealer>) -> RedisBackend {
    let mut options = RedisOptions::default();
    if let Some(sealer) = sealer {
        options = options.with_sealer(sealer);
    }
    RedisBackend::connect_with(url, options)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn alice() -> Principal {
    Principal::new("app").with_subject("alice")
}

/// A task of alice's for tool `t` whose context names her.
fn alices_new_task(arguments: Value) -> NewTask {
    new_task_of(alice(), arguments)
}

/// A task of `principal`'s for tool `t` whose context names them.
fn new_task_of(principal: Principal, arguments: Value) -> NewTask {
    let owner = Owner::of(Some(&principal));
    let snapshot = TaskSnapshot {
        tool: Some("t".to_owned()),
        version: Some("1.0.0".to_owned()),
        principal: Some(principal),
        ..TaskSnapshot::default()
    };
    let Ok(Value::Object(context)) = serde_json::to_value(&snapshot) else {
        panic!("a snapshot is an object");
    };
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object");
    };
    NewTask {
        id: ferrymcp_tasks::new_task_id(),
        owner: owner.clone(),
        caller: owner.as_str().to_owned(),
        tool: "t".to_owned(),
        version: Some("1.0.0".to_owned()),
        arguments,
        context,
        ttl: Some(Duration::from_secs(600)),
        poll_interval: Duration::from_secs(1),
        max_attempts: 1,
    }
}

/// A released task of alice's whose context names her.
async fn alices_task(server: &RedisBackend) -> (Owner, NewTask) {
    let task = alices_new_task(json!({"a": 6}));
    server.submit(task.clone()).await.expect("submit");
    server
        .release(&task.owner, &task.id)
        .await
        .expect("release");
    (task.owner.clone(), task)
}

async fn connection(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .expect("URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connect")
}

/// A field of a stored task, as Redis holds it.
async fn stored(url: &str, prefix: &str, id: &str, field: &str) -> String {
    redis::cmd("HGET")
        .arg(format!("{prefix}:t:{id}"))
        .arg(field)
        .query_async(&mut connection(url).await)
        .await
        .unwrap_or_else(|e| panic!("HGET {field}: {e}"))
}

/// Overwrites a field of a stored task, as anyone with write access to Redis could.
async fn overwrite(url: &str, prefix: &str, id: &str, field: &str, value: &str) {
    let _: () = redis::cmd("HSET")
        .arg(format!("{prefix}:t:{id}"))
        .arg(field)
        .arg(value)
        .query_async(&mut connection(url).await)
        .await
        .unwrap_or_else(|e| panic!("HSET {field}: {e}"));
}

/// The key id a sealed value names.
fn key_id(sealed: &str) -> &str {
    sealed
        .strip_prefix("sealed:v2:")
        .and_then(|rest| rest.split_once(':'))
        .map(|(id, _)| id)
        .unwrap_or_else(|| panic!("not a sealed value: {sealed}"))
}

/// Claims from `worker` and expects nothing handed out; the task ends failed, with a
/// status message that names its credentials. Returns the message.
async fn expect_failed_at_claim(
    server: &RedisBackend,
    worker: &RedisBackend,
    task: &NewTask,
) -> String {
    let runs = worker
        .claim(&WorkerId::new(), 1, Duration::from_millis(200))
        .await
        .expect("claim");
    assert!(
        runs.is_empty(),
        "the run is never handed to a tool: {runs:?}"
    );
    let view = server
        .get(&task.owner, &task.id)
        .await
        .expect("get")
        .expect("the task");
    assert_eq!(view.status, TaskStatus::Failed);
    let message = view.status_message.unwrap_or_default();
    assert!(message.contains("credentials"), "{message}");
    message
}

#[tokio::test]
async fn r55_a_worker_with_the_key_gets_the_caller_back_and_redis_sees_neither_it_nor_the_owner() {
    let redis = RedisServer::shared();
    let url = redis.queue_url("sealing");
    let sealer = Sealer::new(&KEY);
    let server = backend(&url, Some(sealer.clone())).await;
    let (owner, task) = alices_task(&server).await;
    let prefix = server.key_prefix();
    let context = stored(redis.url(), prefix, &task.id, "ctx").await;
    assert!(
        context.starts_with(&format!("sealed:v2:{}:", sealer.key_id())),
        "sealed at rest: {context}"
    );
    assert!(
        !context.contains("alice"),
        "the principal is not readable at rest"
    );
    let body = context
        .rsplit_once(':')
        .map(|(_, body)| body)
        .unwrap_or_default();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(body)
        .expect("base64url");
    // What is sealed: the owner the run is for and the context.
    let plain = json!({"owner": owner.as_str(), "context": task.context});
    let plain_len = serde_json::to_string(&plain).expect("JSON").len();
    assert_eq!(
        bytes.len(),
        24 + plain_len + 16,
        "a 24-byte nonce, the ciphertext and its tag"
    );
    let stored_owner = stored(redis.url(), prefix, &task.id, "owner").await;
    assert!(
        !stored_owner.contains("alice") && !stored_owner.contains("app"),
        "the owner is not readable at rest: {stored_owner}"
    );
    assert_eq!(stored_owner, sealer.tag(owner.as_str()), "its keyed tag");

    let worker = backend(&url, Some(Sealer::new(&KEY))).await;
    let runs = worker
        .claim(&WorkerId::new(), 1, Duration::from_secs(5))
        .await
        .expect("claim");
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0].context, task.context,
        "opened to what was submitted"
    );
    assert_eq!(
        runs[0].owner, owner,
        "the owner comes from the opened caller"
    );
}

#[tokio::test]
async fn without_a_key_the_owner_at_rest_is_a_digest_not_the_principal() {
    let redis = RedisServer::shared();
    let url = redis.queue_url("sealing");
    let server = backend(&url, None).await;
    let (owner, task) = alices_task(&server).await;
    let stored_owner = stored(redis.url(), server.key_prefix(), &task.id, "owner").await;
    assert_eq!(stored_owner, sealing::plain_tag(owner.as_str()));
    assert!(!stored_owner.contains("alice"), "{stored_owner}");
    let view = server.get(&owner, &task.id).await.expect("get");
    assert!(view.is_some(), "its owner still finds it");
    let bob = Owner::of(Some(&Principal::new("app").with_subject("bob")));
    assert!(server.get(&bob, &task.id).await.expect("get").is_none());
    let runs = server
        .claim(&WorkerId::new(), 1, Duration::from_secs(5))
        .await
        .expect("claim");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].owner, owner);
}

#[tokio::test]
async fn r55_a_worker_that_cannot_open_the_context_fails_the_task() {
    let redis = RedisServer::shared();
    for (what, key) in [
        ("no key", None),
        ("another key", Some(Sealer::new(&[9; 32]))),
    ] {
        let url = redis.queue_url("sealing");
        let server = backend(&url, Some(Sealer::new(&KEY))).await;
        let (_, task) = alices_task(&server).await;
        let worker = backend(&url, key).await;
        let message = expect_failed_at_claim(&server, &worker, &task).await;
        assert!(!message.is_empty(), "{what}");
    }
}

#[tokio::test]
async fn r55_a_plaintext_context_put_on_a_task_with_a_key_configured_fails_it_unrun() {
    let redis = RedisServer::shared();
    let url = redis.queue_url("sealing");
    let server = backend(&url, Some(Sealer::new(&KEY))).await;
    let (_, task) = alices_task(&server).await;
    // Someone with write access to Redis replaces the sealed caller with a plain one.
    let forged = json!({"tool": "t", "version": "1.0.0", "principal": {"clientId": "admin"}});
    overwrite(
        redis.url(),
        server.key_prefix(),
        &task.id,
        "ctx",
        &forged.to_string(),
    )
    .await;
    let message = expect_failed_at_claim(&server, &server, &task).await;
    assert!(message.contains("not encrypted"), "{message}");
}

#[tokio::test]
async fn r55_swapping_the_tool_or_arguments_under_a_sealed_context_fails_the_task() {
    let redis = RedisServer::shared();
    for (field, value) in [
        ("tool", "delete_everything".to_owned()),
        ("args", json!({"a": 7}).to_string()),
        ("ver", "2.0.0".to_owned()),
    ] {
        let url = redis.queue_url("sealing");
        let server = backend(&url, Some(Sealer::new(&KEY))).await;
        let (_, task) = alices_task(&server).await;
        overwrite(redis.url(), server.key_prefix(), &task.id, field, &value).await;
        let message = expect_failed_at_claim(&server, &server, &task).await;
        assert!(
            message.contains("could not be decrypted"),
            "{field}: {message}"
        );
    }
}

#[tokio::test]
async fn r55_a_context_moved_from_another_task_of_the_same_owner_fails_it() {
    let redis = RedisServer::shared();
    let url = redis.queue_url("sealing");
    let server = backend(&url, Some(Sealer::new(&KEY))).await;
    let donor = alices_new_task(json!({"a": 6}));
    server.submit(donor.clone()).await.expect("submit");
    let (_, task) = alices_task(&server).await;
    let prefix = server.key_prefix();
    let moved = stored(redis.url(), prefix, &donor.id, "ctx").await;
    overwrite(redis.url(), prefix, &task.id, "ctx", &moved).await;
    expect_failed_at_claim(&server, &server, &task).await;
}

#[tokio::test]
async fn a_key_rotation_keeps_older_tasks_open_findable_and_cancellable() {
    let redis = RedisServer::shared();
    let url = redis.queue_url("sealing");
    let old = Sealer::new(&KEY);
    let before_rotation = backend(&url, Some(old.clone())).await;
    let (owner, sealed_before) = alices_task(&before_rotation).await;
    let to_cancel = alices_new_task(json!({"a": 1}));
    before_rotation
        .submit(to_cancel.clone())
        .await
        .expect("submit");

    // MCP_TASKS_CREDENTIALS_KEY=new,old
    let rotated = Sealer::new(&NEW_KEY).with_older_key(&KEY);
    let after_rotation = backend(&url, Some(rotated.clone())).await;
    let prefix = after_rotation.key_prefix();
    assert!(
        after_rotation
            .get(&owner, &sealed_before.id)
            .await
            .expect("get")
            .is_some(),
        "found by its owner after the rotation"
    );
    assert_eq!(
        after_rotation
            .cancel(&owner, &to_cancel.id)
            .await
            .expect("cancel"),
        Some(CancelAck::Cancelled),
        "cancelled by its owner after the rotation"
    );
    let bob = Owner::of(Some(&Principal::new("app").with_subject("bob")));
    assert!(
        after_rotation
            .get(&bob, &sealed_before.id)
            .await
            .expect("get")
            .is_none(),
        "and still by nobody else"
    );

    let (_, sealed_after) = alices_task(&after_rotation).await;
    let before_context = stored(redis.url(), prefix, &sealed_before.id, "ctx").await;
    let after_context = stored(redis.url(), prefix, &sealed_after.id, "ctx").await;
    assert_eq!(key_id(&before_context), old.key_id());
    assert_eq!(key_id(&after_context), rotated.key_id());
    assert_ne!(rotated.key_id(), old.key_id());
    let after_owner = stored(redis.url(), prefix, &sealed_after.id, "owner").await;
    assert!(
        after_owner.starts_with(&format!("{}.", rotated.key_id())),
        "tagged under the new key: {after_owner}"
    );

    let worker = backend(&url, Some(rotated)).await;
    let mut contexts = Vec::new();
    for _ in 0..10 {
        if contexts.len() == 2 {
            break;
        }
        let runs = worker
            .claim(&WorkerId::new(), 2, Duration::from_secs(5))
            .await
            .expect("claim");
        contexts.extend(runs.into_iter().map(|run| (run.lease.task, run.context)));
    }
    contexts.sort_by(|a, b| a.0.cmp(&b.0));
    let mut expected = vec![
        (sealed_before.id.clone(), sealed_before.context.clone()),
        (sealed_after.id.clone(), sealed_after.context.clone()),
    ];
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(contexts, expected, "both open, each under its own key");
}

#[tokio::test]
async fn without_a_key_a_context_moved_onto_another_owners_task_fails_it() {
    let redis = RedisServer::shared();
    let url = redis.queue_url("sealing");
    let server = backend(&url, None).await;
    let alices = alices_new_task(json!({"a": 6}));
    server.submit(alices.clone()).await.expect("submit");
    let bobs = new_task_of(Principal::new("app").with_subject("bob"), json!({"a": 6}));
    server.submit(bobs.clone()).await.expect("submit");
    let prefix = server.key_prefix();
    let moved = stored(redis.url(), prefix, &alices.id, "ctx").await;
    overwrite(redis.url(), prefix, &bobs.id, "ctx", &moved).await;
    server
        .release(&bobs.owner, &bobs.id)
        .await
        .expect("release");
    let message = expect_failed_at_claim(&server, &server, &bobs).await;
    assert!(message.contains("do not belong"), "{message}");
}
