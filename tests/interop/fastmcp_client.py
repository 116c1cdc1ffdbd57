#!/usr/bin/env python3
"""FastMCP's Python client (fastmcp 4.1 with fastmcp-tasks) against the ferrymcp demo server.

    fastmcp_client.py DEMO_BINARY AUTH_ISSUER GATEWAY_BINARY

Drives the demo over stdio (the client spawns it), over Streamable HTTP (this script
spawns `DEMO_BINARY --http 127.0.0.1:0` and reads its URL from stderr), and through
`GATEWAY_BINARY` (ferrymcp-gateway over HTTP, mounting that demo under the namespace
`demo`: the same checks with the names the gateway gives, `demo_add`,
`demo://demo/readme`): listing, plain calls, a task call the client resolves transparently,
a raw task handle polled to completion, an input round inside a task, cancel, -32021 for
`required_task` from a client that did not opt in to tasks, and a legacy (2025-11-25)
connection. Then, against the demo
with OAuth on (`--auth-issuer AUTH_ISSUER`, the local authorization server of
.ci/auth-server that .ci/interop/fastmcp.sh starts): a static bearer token, no token (401),
FastMCP's client-credentials provider discovering the authorization server from the demo's
RFC 9728 metadata, and its step-up after a 403 for the child's scope. Prints one line per
check and ends with `N passed, M failed`; exits 1 if any check failed. Run by
.ci/interop/fastmcp.sh.
"""

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

from fastmcp import Client
from fastmcp.client.auth import ClientCredentialsOAuthProvider
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from fastmcp.exceptions import ToolError
from fastmcp_tasks import call_tool_task
from mcp.shared.exceptions import MCPError

#: Every check's verdict: (transport, name, error or None).
RESULTS = []

#: The demo's suggested pollIntervalMs, lowered so the polling checks stay quick.
DEMO_ENV = {**os.environ, "MCP_TASKS_POLL_INTERVAL_MS": "50"}

#: How long a task may take to reach a state before the check fails.
DEADLINE_S = 15.0

TERMINAL = {"completed", "failed", "cancelled"}


async def answer_name(message, response_type, params, context):
    """The elicitation handler: every question gets the name Ada."""
    return ElicitResult(action="accept", content={"name": "Ada"})


class TasklessClient(Client):
    """A Client without the tasks extension fastmcp-tasks folds into every Client (the
    switch is a class attribute, read while the client is built)."""

    _auto_internal_extensions = False


def client(transport, *, mode="auto", tasks=True):
    """A FastMCP client; `tasks=False` leaves out the tasks extension."""
    kind = Client if tasks else TasklessClient
    return kind(transport, mode=mode, elicitation_handler=answer_name, timeout=30)


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


class Names:
    """How the checks name the demo's tools, resources and prompts: as the demo does, or,
    with a namespace, as a gateway mounting it under that namespace does (`demo_add`,
    `demo://demo/readme`, `users://demo/child/{id}/profile`)."""

    def __init__(self, namespace=None):
        self.namespace = namespace

    def __call__(self, name):
        return f"{self.namespace}_{name}" if self.namespace else name

    def uri(self, uri):
        if not self.namespace:
            return uri
        scheme, rest = uri.split("://", 1)
        return f"{scheme}://{self.namespace}/{rest}"


def structured(result):
    """A tool result's value: `structuredContent.result` (the demo wraps scalars)."""
    content = result.structured_content or {}
    return content.get("result", content)


async def wait_for(task, states):
    """Polls a ToolTask's status until it is in `states`, within DEADLINE_S."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        status = await task.status()
        if status.status in states:
            return status
        expect(status.status not in TERMINAL, f"task ended {status.status}, wanted {states}")
        expect(time.monotonic() < deadline, f"task still {status.status} after {DEADLINE_S}s")
        # The server's pollIntervalMs paces a real client the same way.
        await asyncio.sleep(0.05)


# ---- the checks: each takes a transport factory and the demo's names ---------------------


async def listing(make, n):
    async with client(make()) as c:
        tools = {t.name: t for t in await c.list_tools()}
        want = {n(name) for name in ("add", "parent_tool", "sleep_task", "required_task",
                                     "ask_name", "child_multiply", "child_echo")}
        expect(want <= set(tools), f"tools: {sorted(tools)}")
        add = tools[n("add")]
        expect(add.inputSchema["required"] == ["a", "b"], add.inputSchema)
        resources = [str(r.uri) for r in await c.list_resources()]
        expect(n.uri("demo://readme") in resources, resources)
        templates = [t.uri_template for t in await c.list_resource_templates()]
        expect(n.uri("users://child/{id}/profile") in templates, templates)
        prompts = [p.name for p in await c.list_prompts()]
        expect(n("child_greet") in prompts, prompts)


async def plain_calls(make, n):
    async with client(make()) as c:
        expect(structured(await c.call_tool(n("add"), {"a": 2, "b": 3})) == 5, "add(2, 3)")
        echoed = await c.call_tool(n("child_echo"), {"message": "hi"})
        expect(echoed.content[0].text == "hi", echoed)
        readme = await c.read_resource(n.uri("demo://readme"))
        expect("ferrymcp demo" in readme[0].text, readme)
        profile = await c.read_resource(n.uri("users://child/7/profile"))
        expect('"id":7' in profile[0].text.replace(" ", ""), profile)
        greeting = await c.get_prompt(n("child_greet"), {"name": "Ada", "style": "formal"})
        expect("formal greeting to Ada" in greeting.messages[0].content.text, greeting)
        try:
            await c.call_tool(n("add"), {"a": "x", "b": 1})
            raise AssertionError("add with a non-integer must fail")
        except (ToolError, MCPError) as error:
            expect("a" in str(error), error)


async def transparent_task(make, n):
    async with client(make()) as c:
        # parent_tool runs as a task for this opted-in client; call_tool polls it to the end.
        result = await c.call_tool(n("parent_tool"), {"value": 4})
        expect(structured(result) == 40, result)
        # An input round inside a task, answered through the elicitation handler.
        greeting = await c.call_tool(n("ask_name"), {})
        expect(greeting.content[0].text == "Hello, Ada!", greeting)


async def raw_task_handle(make, n):
    async with client(make()) as c:
        task = await call_tool_task(c, n("child_multiply"), {"a": 6, "b": 7})
        expect(task.task_id, "a task id")
        final = await wait_for(task, {"completed"})
        expect(final.status == "completed", final)
        result = await task.result()
        expect(structured(result) == 42, result)


async def cancel(make, n):
    async with client(make()) as c:
        task = await call_tool_task(c, n("sleep_task"), {"seconds": 30})
        await wait_for(task, {"working"})
        await task.cancel()
        final = await wait_for(task, TERMINAL)
        expect(final.status == "cancelled", final)


async def required_task_without_opt_in(make, n):
    async with client(make(), tasks=False) as c:
        try:
            await c.call_tool(n("required_task"), {"value": 1})
            raise AssertionError("required_task answered a client that did not opt in")
        except MCPError as error:
            expect(error.error.code == -32021, error.error)
        # An optional task tool simply runs synchronously for this client.
        expect(structured(await c.call_tool(n("parent_tool"), {"value": 2})) == 20, "sync")


async def legacy_connection(make, n):
    async with client(make(), mode="legacy") as c:
        expect(c.protocol_version == "2025-11-25", c.protocol_version)
        expect(structured(await c.call_tool(n("add"), {"a": 40, "b": 2})) == 42, "add")
        # No tasks on this era: a task-capable tool runs synchronously.
        expect(structured(await c.call_tool(n("child_multiply"), {"a": 3, "b": 4})) == 12,
               "mul")
        # The input round becomes a real elicitation/create request.
        greeting = await c.call_tool(n("ask_name"), {})
        expect(greeting.content[0].text == "Hello, Ada!", greeting)


CHECKS = [listing, plain_calls, transparent_task, raw_task_handle, cancel,
          required_task_without_opt_in, legacy_connection]


# ---- transports ----------------------------------------------------------------------------


# ---- OAuth: the demo as a resource server ----------------------------------------------------

#: A client of the local authorization server (.ci/auth-server/server.mjs).
CLIENT_ID, CLIENT_SECRET = "client-a", "secret-a"


def fetch_token(issuer, resource, scope):
    """A client-credentials JWT from the local authorization server for `resource`."""
    body = urllib.parse.urlencode(
        {"grant_type": "client_credentials", "resource": resource, "scope": scope}).encode()
    basic = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
    request = urllib.request.Request(
        f"{issuer}/token", data=body,
        headers={"Authorization": f"Basic {basic}",
                 "Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["access_token"]


def tool_names(tools):
    return {t.name for t in tools}


async def auth_static_bearer(url, issuer):
    token = fetch_token(issuer, url, "child")
    async with client(StreamableHttpTransport(url, auth=token)) as c:
        names = tool_names(await c.list_tools())
        expect({"add", "child_multiply", "child_echo"} <= names, sorted(names))
        expect(structured(await c.call_tool("child_multiply", {"a": 6, "b": 7})) == 42, "mul")
        # A task runs as the caller, and only the caller polls it.
        expect(structured(await c.call_tool("parent_tool", {"value": 4})) == 40, "task")


async def auth_scope_narrows_the_listing(url, issuer):
    token = fetch_token(issuer, url, "")
    async with client(StreamableHttpTransport(url, auth=token)) as c:
        names = tool_names(await c.list_tools())
        expect("add" in names and "child_multiply" not in names, sorted(names))
        expect(structured(await c.call_tool("add", {"a": 2, "b": 3})) == 5, "add")


async def auth_no_token_is_refused(url, issuer):
    # On the wire: 401 with the challenge that names the metadata.
    request = urllib.request.Request(
        url, data=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=10)
        raise AssertionError("a POST without a token was served")
    except urllib.error.HTTPError as error:
        expect(error.code == 401, error.code)
        expect("resource_metadata=" in error.headers.get("WWW-Authenticate", ""), error.headers)
    # And FastMCP's client, given no credentials, gets no session.
    try:
        async with client(StreamableHttpTransport(url)) as c:
            await c.list_tools()
    except Exception:  # the client reports the refusal its own way
        return
    raise AssertionError("a client without a token was served")


async def auth_client_credentials_discovery(url, issuer):
    # Discovers the authorization server from the demo's RFC 9728 metadata.
    auth = ClientCredentialsOAuthProvider(
        client_id=CLIENT_ID, client_secret=CLIENT_SECRET, scopes="child")
    async with client(StreamableHttpTransport(url, auth=auth)) as c:
        expect(structured(await c.call_tool("child_multiply", {"a": 3, "b": 5})) == 15, "mul")


async def auth_step_up_after_403(url, issuer):
    # No scope at first: the child's tool answers 403 naming `child`, and the provider
    # gets a token with it and retries.
    auth = ClientCredentialsOAuthProvider(client_id=CLIENT_ID, client_secret=CLIENT_SECRET)
    async with client(StreamableHttpTransport(url, auth=auth)) as c:
        expect(structured(await c.call_tool("add", {"a": 1, "b": 1})) == 2, "add")
        expect(structured(await c.call_tool("child_multiply", {"a": 2, "b": 8})) == 16, "mul")


AUTH_CHECKS = [auth_static_bearer, auth_scope_narrows_the_listing, auth_no_token_is_refused,
               auth_client_credentials_discovery, auth_step_up_after_403]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServer:
    """A server serving HTTP that announces `listening on URL` on stderr, after at most a
    few lines of its log (the demo's OAuth lines, the gateway's warnings)."""

    def __init__(self, args):
        self.process = subprocess.Popen(
            args,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=DEMO_ENV,
        )
        seen = []
        # readline blocks until the line arrives or the process exits (EOF): no polling.
        line = self.process.stderr.readline()
        while line and not line.startswith("listening on ") and len(seen) < 20:
            seen.append(line)
            line = self.process.stderr.readline()
        if not line.startswith("listening on "):
            self.process.kill()
            raise RuntimeError(f"{args[0]} did not start: {seen + [line]!r}")
        self.url = line.removeprefix("listening on ").strip()
        # Keep draining stderr so the server never blocks on a full pipe.
        self.drain = asyncio.get_running_loop().run_in_executor(
            None, self.process.stderr.read)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


class HttpDemo(HttpServer):
    """The demo serving HTTP on a free port. With `issuer`, OAuth is on: the demo's audience
    is its own URL."""

    def __init__(self, binary, issuer=None):
        args = [binary, "--http", "127.0.0.1:0"]
        if issuer:
            port = free_port()
            args = [binary, "--http", f"127.0.0.1:{port}", "--auth-issuer", issuer,
                    "--auth-audience", f"http://127.0.0.1:{port}/mcp"]
        super().__init__(args)


class Gateway(HttpServer):
    """ferrymcp-gateway serving HTTP on a free port, mounting the server at `upstream`
    under the namespace `demo`."""

    def __init__(self, binary, upstream):
        self.config = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
        self.config.write(f'name = "gateway"\n\n[[upstream]]\nnamespace = "demo"\n'
                          f'url = "{upstream}"\n')
        self.config.close()
        super().__init__([binary, "--config", self.config.name, "--http", "127.0.0.1:0"])

    def stop(self):
        super().stop()
        os.unlink(self.config.name)


async def run_checks(transport, checks, *args):
    for check in checks:
        try:
            await asyncio.wait_for(check(*args), timeout=60)
            RESULTS.append((transport, check.__name__, None))
            print(f"PASS {transport} {check.__name__}", flush=True)
        except Exception as error:  # a check's failure, whatever it is
            RESULTS.append((transport, check.__name__, error))
            print(f"FAIL {transport} {check.__name__}: {error!r}", flush=True)
            traceback.print_exc()


async def run_auth(binary, issuer):
    demo = HttpDemo(binary, issuer)
    try:
        await run_checks("http+oauth", AUTH_CHECKS, demo.url, issuer)
    finally:
        demo.stop()
        await demo.drain


async def run_all(binary, issuer, gateway_binary):
    await run_auth(binary, issuer)
    http = HttpDemo(binary)
    gateway = None
    try:
        gateway = Gateway(gateway_binary, http.url)
        transports = {
            "stdio": (lambda: StdioTransport(binary, ["--stdio"], env=DEMO_ENV,
                                             keep_alive=False), Names()),
            "http": (lambda: StreamableHttpTransport(http.url), Names()),
            "gateway": (lambda: StreamableHttpTransport(gateway.url), Names("demo")),
        }
        for transport, (make, names) in transports.items():
            await run_checks(transport, CHECKS, make, names)
    finally:
        for server in (gateway, http):
            if server is not None:
                server.stop()
                await server.drain


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    asyncio.run(run_all(sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3]))
    failed = sum(1 for _, _, error in RESULTS if error is not None)
    print(f"{len(RESULTS) - failed} passed, {failed} failed")
    sys.exit(1 if failed or not RESULTS else 0)


if __name__ == "__main__":
    main()
