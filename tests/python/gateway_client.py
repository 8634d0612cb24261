"""Drive `toolsearch serve` with the official Python MCP SDK's client (stdio).

Usage: gateway_client.py TOOLSEARCH_BINARY CONFIG NOTES_FILE
Checks: initialize, the controls listed, discover, describe, a valid call through call_tool
(server-filesystem reads a real file), an invalid call refused by the gateway. Prints
"N passed, 0 failed" and exits 0 when every check holds; exits 1 at the first failure.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def payload(result):
    text = result.content[0].text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


async def main(binary: str, config: str, notes: str) -> int:
    passed = 0

    def check(condition: bool, what: str, detail) -> None:
        nonlocal passed
        if not condition:
            print(f"FAILED: {what}: {detail}", file=sys.stderr)
            raise SystemExit(1)
        passed += 1

    params = StdioServerParameters(command=binary, args=["serve", "--config", config])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "toolsearch", "server name", init.server_info)
            check("discover_tools" in (init.instructions or ""), "instructions", init.instructions)

            tools = await session.list_tools()
            names = [t.name for t in tools.tools]
            check(names == ["discover_tools", "describe_tool", "call_tool", "list_tools", "list_tool_groups"], "controls", names)

            found = payload(await session.call_tool("discover_tools", {"query": "read text file", "group": "files"}))
            check(found["tools"][0]["tool"] == "read_text_file", "discover", found)

            described = payload(await session.call_tool("describe_tool", {"group": "files", "tool": "read_text_file"}))
            check("path" in described["tool"]["parameters_json_schema"]["properties"], "describe", described)

            read_result = await session.call_tool("call_tool", {"group": "files", "tool": "read_text_file", "arguments": {"path": notes}})
            check(not read_result.is_error and "remember the milk" in json.dumps(read_result.model_dump()), "call", read_result)

            refused = await session.call_tool("call_tool", {"group": "files", "tool": "read_text_file", "arguments": {"path": 7}})
            body = payload(refused)
            check(refused.is_error and body["error"] == "invalid_arguments" and body["path"] == "/path", "invalid arguments", body)

    print(f"{passed} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:4])))
