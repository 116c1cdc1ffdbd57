use ferrymcp_core::{Args, Context, Server, State, auth::Principal};
use ferrymcp_macros::{prompt, resource, tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    q: String,
}

/// Searches.
#[tool(read_only, destructive = false, task = "required", version = "1.2", requires = ["search"])]
async fn search(cx: Context, principal: Option<Principal>, Args(query): Args<Query>) -> String {
    format!("{} {} {:?}", cx.server().name(), query.q, principal.map(|p| p.scope_key()))
}

#[tool]
async fn counted(State(count): State<u32>, mut n: u32) -> Result<u32, ferrymcp_core::ToolError> {
    n += count;
    Ok(n)
}

#[resource("files://{+path}")]
async fn file(path: String) -> String {
    path
}

#[prompt(name = "ask")]
async fn ask_prompt() -> &'static str {
    "ask"
}

fn main() {
    let server = Server::new("s");
    server.insert_state(1_u32);
    server.add_tool(search).unwrap();
    server.add_tool(counted).unwrap();
    server.add_resource(file).unwrap();
    server.add_prompt(ask_prompt).unwrap();
}
