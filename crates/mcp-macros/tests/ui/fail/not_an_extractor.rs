use ferrymcp_core::{Args, ToolDef};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

// Without the macro, a plain parameter is not an extractor.
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

// The arguments must come last.
async fn misplaced(Args(pair): Args<Pair>, cx: ferrymcp_core::Context) -> i64 {
    let _ = cx;
    pair.a + pair.b
}

fn main() {
    let _ = ToolDef::new("add", add);
    let _ = ToolDef::new("misplaced", misplaced);
}
