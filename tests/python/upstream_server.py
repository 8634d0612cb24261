"""An MCP server on the official Python SDK, as a gateway's upstream in
crates/toolsearch-cli/tests/gateway.rs and transparency.rs: `MCPServer` on mcp 2.x
(target/pyenv), `FastMCP` on the last 1.x release (target/pyenv-1x). Tools: shout {text}
(upper-cased back, after `delay_ms` milliseconds, so calls overlap), fail {why} (raises the SDK's
ToolError: an error result saying why), and on 2.x confirm {what} (asks the person through the
SDK's `Resolve(Elicit)`: mid-call on the handshake's protocols, an `input_required` result on
2026-07-28).

Usage: upstream_server.py            stdio
       upstream_server.py --http     streamable HTTP on 127.0.0.1, a free port; prints
                                     "listening on http://127.0.0.1:PORT/mcp"
"""

import asyncio
import socket
import sys
from typing import Annotated

from pydantic import BaseModel

try:
    from mcp.server.mcpserver import ElicitationResult, Elicit, MCPServer as Server, Resolve
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server
    from mcp.server.fastmcp.exceptions import ToolError

    Resolve = None

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


if Resolve is not None:

    class Approval(BaseModel):
        note: str

    def ask(what: str) -> Elicit[Approval]:
        return Elicit(f"May I {what}?", Approval)

    @app.tool()
    def confirm(what: str, answer: Annotated[ElicitationResult[Approval], Resolve(ask)]) -> str:
        """Asks the person whether to do what, and says what they answered."""
        note = getattr(getattr(answer, "data", None), "note", "")
        return f"{what}: {answer.action} {note}".strip()


async def serve_http() -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app.streamable_http_app(), log_level="warning"))
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
    await server.serve(sockets=[sock])


if __name__ == "__main__":
    if "--http" in sys.argv[1:]:
        asyncio.run(serve_http())
    else:
        app.run()
