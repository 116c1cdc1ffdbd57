struct Report {
    lines: u32,
}

#[ferrymcp_macros::tool]
async fn report() -> Report {
    Report { lines: 1 }
}

fn main() {}
