//! Mounting: a child server's tools, resources, templates and prompts appear in the parent
//! under the child's namespace (`users_lookup`, `users://users/{id}/profile`,
//! `users_greet`), and a second mount of the same child under another namespace shares its
//! state.
//!
//! `cargo run --example mount -- 127.0.0.1:8000`

use ferrymcp::{Json, Server, State, prompt, resource, tool};
use serde_json::{Value, json};

/// Looks a user up by id.
#[tool(read_only)]
async fn lookup(State(directory): State<&'static [&'static str]>, id: usize) -> Option<String> {
    directory.get(id).map(|name| (*name).to_owned())
}

/// A user's profile.
#[resource("users://{id}/profile", mime_type = "application/json")]
async fn profile(id: u32) -> Json<Value> {
    Json(json!({ "id": id }))
}

/// Writes a greeting for someone.
#[prompt]
async fn greet(
    /// Whom to greet
    name: String,
) -> String {
    format!("Write a short greeting for {name}")
}

#[tokio::main]
async fn main() -> Result<(), ferrymcp::ServerError> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8000".into());
    let users = Server::new("users");
    users.insert_state::<&'static [&'static str]>(&["ada", "grace", "alan"]);
    users.add_tool(lookup)?;
    users.add_resource(profile)?;
    users.add_prompt(greet)?;

    let parent = Server::new("directory");
    parent.mount(&users, "users")?;
    parent.mount(&users, "people")?; // the same child again: people_lookup, ...
    parent.serve_http(address).await
}
