"""A FastMCP (PyPI `fastmcp` 4.1.x) server used as a foreign upstream by tests/suite/proxy_fastmcp.rs.

Run over stdio: `python upstream.py`. Tools: `greet(name)`, `divide(a, b)` (a tool error on
b == 0), `slow_double(value)`, a task tool (`task=True`: `execution.taskSupport` is
`optional` in its 2025-11-25 listing), and `learn(name)`, which adds a tool `name` answering
its own name and announces `notifications/tools/list_changed`.
"""

import asyncio

import mcp.types as mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp_tasks import TasksExtension

mcp = FastMCP("fastmcp-upstream")
# The memory backend: no Redis needed.
mcp.add_extension(TasksExtension(url="memory://"))


@mcp.tool(title="Greeter", tags={"people"}, annotations={"readOnlyHint": True})
def greet(name: str) -> str:
    """Says hello."""
    return f"Hello, {name}!"


@mcp.tool
def divide(a: float, b: float) -> float:
    """a / b."""
    if b == 0:
        raise ToolError("division by zero")
    return a / b


@mcp.tool(task=True)
async def slow_double(value: int) -> int:
    """Doubles, after a short pause."""
    await asyncio.sleep(0.05)
    return value * 2


@mcp.tool
async def learn(name: str, ctx: Context) -> str:
    """Adds a tool `name` that answers its own name, and says the tool list changed."""

    def learned() -> str:
        return name

    mcp.tool(learned, name=name)
    await ctx.send_notification(mcp_types.ToolListChangedNotification())
    return f"learned {name}"


if __name__ == "__main__":
    mcp.run(show_banner=False)
