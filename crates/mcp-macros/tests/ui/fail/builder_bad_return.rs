use ferrymcp_core::{PromptDef, ResourceDef, ToolDef};

struct Report;

async fn report() -> Report {
    Report
}

fn main() {
    let _ = ToolDef::new("report", report);
    let _ = ResourceDef::new("demo://report", report);
    let _ = PromptDef::new("report", report);
}
