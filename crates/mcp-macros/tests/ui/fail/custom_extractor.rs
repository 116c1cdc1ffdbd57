struct Database;

// `#[extract]` marks an extractor of one's own; it must implement `FromContext`.
#[ferrymcp_macros::tool]
async fn count(#[extract] db: Database, table: String) -> usize {
    let _ = db;
    table.len()
}

fn main() {}
