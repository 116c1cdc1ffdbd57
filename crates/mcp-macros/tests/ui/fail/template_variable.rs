#[ferrymcp_macros::resource("users://{id}/posts/{post}")]
async fn post(id: u32) -> String {
    id.to_string()
}

#[ferrymcp_macros::resource(mime_type = "text/plain")]
async fn nowhere() -> String {
    String::new()
}

fn main() {}
