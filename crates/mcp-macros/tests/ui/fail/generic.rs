#[ferrymcp_macros::tool]
async fn show<T: std::fmt::Debug>(value: T) -> String {
    format!("{value:?}")
}

fn main() {}
