"""A stdio MCP server on the official Python SDK, as a gateway's upstream in
crates/toolsearch-cli/tests/gateway.rs: `MCPServer` on mcp 2.x (target/pyenv), `FastMCP` on the
last 1.x release (target/pyenv-1x). Tools: shout {text} (upper-cased back, after `delay_ms`
milliseconds, so calls overlap), fail {why} (raises the SDK's ToolError: an error result saying why)."""

import asyncio

try:
    from mcp.server.mcpserver import MCPServer as Server
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server
    from mcp.server.fastmcp.exceptions import ToolError

app = Server("python-upstream")


@app.tool()
async def shout(text: str, delay_ms: int = 0) -> str:
    """Upper-case the text, after delay_ms milliseconds."""
    await asyncio.sleep(delay_ms / 1000)
    return text.upper()


@app.tool()
def fail(why: str) -> str:
    """Always fails, saying why."""
    raise ToolError(why)


if __name__ == "__main__":
    app.run()
