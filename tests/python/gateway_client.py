"""Drive `toolsearch serve` with the official Python MCP SDK's clients.

Usage: gateway_client.py MODE TOOLSEARCH_BINARY CONFIG NOTES_FILE [URL]

MODE is one of
  session-stdio   the SDK's `ClientSession` (the initialize handshake) over stdio; also runs
                  on the SDK's 1.x releases (camelCase result fields)
  client-stdio    the SDK's default `Client` (mode "auto": `server/discover`, protocol 2026-07-28
                  when the server speaks it) over stdio
  client-http     the default `Client` over streamable HTTP at URL (a running `serve --http`)

Checks: the server's name and instructions, the controls listed, discover, describe, a valid
call through call_tool (server-filesystem reads a real file), an invalid call refused by the
gateway, and (with `Client`) the negotiated protocol, and upstream resources and prompts passed
through. Prints "N passed, 0 failed" and exits 0 when every check holds; exits 1 at the first
failure.
"""

import asyncio
import json
import sys

import mcp
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from checks import Checks, connected, payload

CONTROLS = ["discover_tools", "describe_tool", "call_tool", "list_tools", "list_tool_groups"]


def field(obj, name):
    """A result field by its snake_case name (SDK 2.x), or its camelCase one (SDK 1.x)."""
    if hasattr(obj, name):
        return getattr(obj, name)
    head, *rest = name.split("_")
    return getattr(obj, head + "".join(w.capitalize() for w in rest))


async def controls(session, check, notes, server_info, instructions):
    check(server_info is not None and server_info.name == "toolsearch", "server name", server_info)
    check("discover_tools" in (instructions or ""), "instructions", instructions)

    tools = await session.list_tools()
    names = [t.name for t in tools.tools]
    check(names == CONTROLS, "controls", names)
    await connected(session)

    found = payload(await session.call_tool("discover_tools", {"query": "read text file", "group": "files"}))
    check(found["tools"][0]["tool"] == "read_text_file", "discover", found)

    described = payload(await session.call_tool("describe_tool", {"group": "files", "tool": "read_text_file"}))
    check("path" in described["tool"]["parameters_json_schema"]["properties"], "describe", described)

    read_result = await session.call_tool(
        "call_tool", {"group": "files", "tool": "read_text_file", "arguments": {"path": notes}}
    )
    check(not field(read_result, "is_error") and "remember the milk" in json.dumps(read_result.model_dump()), "call", read_result)

    refused = await session.call_tool("call_tool", {"group": "files", "tool": "read_text_file", "arguments": {"path": 7}})
    body = payload(refused)
    check(field(refused, "is_error") and body["error"] == "invalid_arguments" and body["path"] == "/path", "invalid arguments", body)


async def passthrough(client, check):
    """server-everything's resources and prompts, under the gateway's names."""
    resources = await client.list_resources()
    uris = [r.uri for r in resources.resources]
    check(any(str(u).startswith("toolsearch://everything/") for u in uris), "resources listed", uris)
    first = str(uris[0])
    read = await client.read_resource(first)
    check(len(read.contents) > 0, "resource read", read)

    templates = await client.list_resource_templates()
    shapes = [str(field(t, "uri_template")) for t in templates.resource_templates]
    check(any(t.startswith("toolsearch://everything/") for t in shapes), "resource templates listed", shapes)

    prompts = await client.list_prompts()
    names = [p.name for p in prompts.prompts]
    check("everything__simple-prompt" in names, "prompts listed", names)
    got = await client.get_prompt("everything__simple-prompt")
    check(len(got.messages) > 0, "prompt got", got)


async def main(mode: str, binary: str, config: str, notes: str, url: str | None = None) -> int:
    check = Checks()
    params = StdioServerParameters(command=binary, args=["serve", "--config", config])
    if mode == "session-stdio":
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                await controls(session, check, notes, field(init, "server_info"), init.instructions)
    elif mode in ("client-stdio", "client-http"):
        target = params if mode == "client-stdio" else url
        async with mcp.Client(target) as client:
            check(client.protocol_version == "2026-07-28", "protocol", client.protocol_version)
            await controls(client, check, notes, client.server_info, client.instructions)
            await passthrough(client, check)
    else:
        print(f"unknown mode {mode!r}", file=sys.stderr)
        return 2
    print(f"{check.passed} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:])))
