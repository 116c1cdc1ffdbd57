//! Micro-benchmark of an in-process `tools/call`.
//!
//! Every case calls `multiply(a, b) -> a * b` (an `Args<Pair>` tool) with
//! `Server::call_tool(name, {"a": 6, "b": 7})` on a current-thread tokio runtime:
//!
//! * `mount_levels/{0,1,3}`: the tool on the called server (`multiply`), one mount below it
//!   (`l1_multiply`), three mounts below it (`l1_l2_l3_multiply`); no middleware anywhere.
//! * `middleware/{0,1,5}`: the tool on the called server, behind 0, 1 or 5 pass-through
//!   middlewares (a `Middleware` implementing no hook, so every default hook runs).
//! * `definition/{builder,macro}`: the tool on the called server, defined with the builder
//!   (`ToolDef::new` and an `Args<Pair>` handler) or with `#[tool]` on `multiply(a, b)`.
//! * `baseline/args_clone`: the arguments are built once, outside the timed loop, and cloned
//!   inside it (`call_tool` takes them by value); this is the cost of that clone, to subtract
//!   if wanted. `baseline/args_build` builds them with `json!` instead, for comparison.
//!
//! Run it with `cargo bench -p ferrymcp-core --bench call`; results are in `BENCHMARKS.md`.

use std::{hint::black_box, time::Duration};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ferrymcp_core::{Args, Middleware, Server, ToolDef, types::CallToolResponse};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

async fn multiply(Args(Pair { a, b }): Args<Pair>) -> i64 {
    a * b
}

/// The same tool written with `#[tool]`.
#[ferrymcp_macros::tool(name = "multiply")]
async fn multiply_macro(a: i64, b: i64) -> i64 {
    a * b
}

struct PassThrough;

impl Middleware for PassThrough {}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
}

fn arguments() -> Value {
    json!({"a": 6, "b": 7})
}

fn with_multiply(name: &str) -> Server {
    let server = Server::new(name);
    server
        .add_tool(ToolDef::new("multiply", multiply))
        .expect("multiply registers");
    server
}

/// A chain of `levels` servers, each mounted into the one above under `l<depth>`, with
/// `multiply` on the deepest; returns the top server and the tool's name there.
fn mounted(levels: usize) -> (Server, String) {
    let mut server = with_multiply("leaf");
    for depth in (1..=levels).rev() {
        let parent = Server::new(format!("level{}", depth - 1));
        parent
            .mount(&server, format!("l{depth}"))
            .expect("the child mounts");
        server = parent;
    }
    let prefix: String = (1..=levels).map(|depth| format!("l{depth}_")).collect();
    (server, format!("{prefix}multiply"))
}

/// `multiply` on a server behind `count` pass-through middlewares.
fn with_middleware(count: usize) -> Server {
    let server = with_multiply("root");
    for _ in 0..count {
        server.add_middleware(PassThrough);
    }
    server
}

/// Fails loudly, before timing, if the call does not return 42.
fn check(rt: &Runtime, server: &Server, name: &str) {
    let reply = rt
        .block_on(server.call_tool(name, arguments()))
        .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let CallToolResponse::Complete(result) = reply else {
        panic!("{name}: not a complete result");
    };
    assert_eq!(
        result.structured_content.expect("structured content")["result"],
        42,
        "{name}"
    );
}

fn bench_call<P: std::fmt::Display>(
    c: &mut Criterion,
    rt: &Runtime,
    group: &str,
    cases: Vec<(P, Server, String)>,
) {
    let arguments = arguments();
    let mut group = c.benchmark_group(group);
    for (parameter, server, name) in cases {
        check(rt, &server, &name);
        group.bench_function(BenchmarkId::from_parameter(parameter), |b| {
            b.to_async(rt).iter(|| async {
                black_box(
                    server
                        .call_tool(name.as_str(), arguments.clone())
                        .await
                        .expect("the call succeeds"),
                )
            });
        });
    }
    group.finish();
}

fn baseline(c: &mut Criterion) {
    let arguments = arguments();
    let mut group = c.benchmark_group("baseline");
    group.bench_function("args_clone", |b| b.iter(|| black_box(&arguments).clone()));
    group.bench_function("args_build", |b| {
        b.iter(|| json!({"a": black_box(6), "b": black_box(7)}))
    });
    group.finish();
}

fn mount_levels(c: &mut Criterion) {
    let rt = runtime();
    let cases = [0, 1, 3]
        .into_iter()
        .map(|levels| {
            let (server, name) = mounted(levels);
            (levels, server, name)
        })
        .collect();
    bench_call(c, &rt, "mount_levels", cases);
}

fn middleware(c: &mut Criterion) {
    let rt = runtime();
    let cases = [0, 1, 5]
        .into_iter()
        .map(|count| (count, with_middleware(count), "multiply".to_owned()))
        .collect();
    bench_call(c, &rt, "middleware", cases);
}

/// The same tool defined with the builder (`ToolDef::new` and an `Args<Pair>` handler) and
/// with `#[tool]`.
fn definition(c: &mut Criterion) {
    let rt = runtime();
    let by_macro = Server::new("root");
    by_macro
        .add_tool(multiply_macro)
        .expect("the macro's tool registers");
    let cases = vec![
        ("builder", with_multiply("root"), "multiply".to_owned()),
        ("macro", by_macro, "multiply".to_owned()),
    ];
    bench_call(c, &rt, "definition", cases);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50);
    targets = baseline, mount_levels, middleware, definition
}
criterion_main!(benches);
