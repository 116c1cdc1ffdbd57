use ferrymcp_core::Args;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
}

#[ferrymcp_macros::tool]
async fn add(Args(pair): Args<Pair>, b: i64) -> i64 {
    pair.a + b
}

fn main() {}
