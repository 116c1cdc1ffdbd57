#[ferrymcp_macros::tool]
async fn echo(message: &str) -> String {
    message.to_owned()
}

fn main() {}
