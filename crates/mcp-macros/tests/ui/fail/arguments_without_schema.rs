use ferrymcp_core::{Args, ToolDef};

#[derive(serde::Deserialize)]
struct Pair {
    a: i64,
}

async fn first(Args(pair): Args<Pair>) -> i64 {
    pair.a
}

fn main() {
    let _ = ToolDef::new("first", first);
}
