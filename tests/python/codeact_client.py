"""Drive CodeAct through `toolsearch serve` with the official Python MCP SDK's default `Client`.

Usage: codeact_client.py TOOLSEARCH_BINARY CONFIG [URL]

Over stdio (or streamable HTTP at URL, a running `serve --http`), against server-everything
whose source lets programs call `echo` and `get-sum` but not `get-env`: `run_code` is listed and
taught by the instructions; a program discovers `get-sum` and calls it, and echoes, in one run;
a program's call of `get-env` is refused with `codeact_denied` while `call_tool` still runs it;
full entries say which tools are eligible; a saved program runs with `run_program`, and a path
out of its folder is refused; a program past its time limit is stopped and the next run works.
Prints "N passed, 0 failed" and exits 0 when every check holds; exits 1 at the first failure.
"""

import asyncio
import sys

import mcp
from mcp import StdioServerParameters

from checks import Checks, connected, payload


DISCOVER_AND_CALL = """
found = await discover_tools(query="sum of two numbers", group="everything")
tool = found["tools"][0]["tool"]
total = await call_tool(group="everything", tool=tool, arguments={"a": inputs["a"], "b": inputs["b"]})
echoed = await call_tool(group="everything", tool="echo", arguments={"message": "hi"})
print("used", tool)
{"tool": tool, "sum": total["content"][0]["text"], "echo": echoed["content"][0]["text"]}
"""


async def checks(client, check):
    tools = [t.name for t in (await client.list_tools()).tools]
    check("run_code" in tools and "run_program" in tools, "CodeAct controls listed", tools)
    check("run_code" in (client.instructions or ""), "instructions teach run_code", client.instructions)
    await connected(client)

    result = await client.call_tool("run_code", {"code": DISCOVER_AND_CALL, "inputs": {"a": 2, "b": 3}})
    out = payload(result)
    check(not result.is_error, "run_code succeeded", out)
    check(out["result"]["tool"] == "get-sum", "discovered get-sum", out)
    check("5" in out["result"]["sum"], "called get-sum", out)
    check("hi" in out["result"]["echo"], "called echo", out)
    check(out["stdout"] == "used get-sum\n" and out["calls"] == 3, "stdout and calls", out)

    denied = payload(await client.call_tool(
        "run_code", {"code": 'await call_tool(group="everything", tool="get-env", arguments={})'}
    ))
    check(denied["result"]["error"] == "codeact_denied", "get-env refused from code", denied)
    direct = await client.call_tool("call_tool", {"group": "everything", "tool": "get-env", "arguments": {}})
    check(not direct.is_error, "get-env callable through call_tool", direct)

    entry = payload(await client.call_tool("describe_tool", {"group": "everything", "tool": "get-sum"}))
    check(entry["tool"]["codeact_eligible"] is True, "get-sum eligible", entry)
    entry = payload(await client.call_tool("describe_tool", {"group": "everything", "tool": "get-env"}))
    check(entry["tool"]["codeact_eligible"] is False, "get-env not eligible", entry)

    saved = payload(await client.call_tool("run_program", {"path": "echo.codeact.py", "inputs": {"word": "saved"}}))
    check(saved.get("result") == "Echo: saved", "run_program", saved)
    escaped = payload(await client.call_tool("run_program", {"path": "../outside.codeact.py"}))
    check(escaped["error"] == "invalid_request", "path out of the folder refused", escaped)

    stopped = await client.call_tool("run_code", {"code": "while True:\n    pass\n"})
    check(stopped.is_error and payload(stopped)["error"] == "timeout", "busy loop stopped", payload(stopped))
    again = payload(await client.call_tool("run_code", {"code": "sum(range(10))"}))
    check(again["result"] == 45, "the gateway serves the next run", again)


async def main(binary: str, config: str, url: str | None = None) -> int:
    check = Checks()
    target = url or StdioServerParameters(command=binary, args=["serve", "--config", config])
    async with mcp.Client(target) as client:
        await checks(client, check)
    print(f"{check.passed} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:])))
