"""What the Python clients of the gateway tests share: reading a result's JSON, counting
checks (exit 1 at the first failure), and waiting until every upstream is connected."""

import asyncio
import json
import sys


def payload(result):
    text = result.content[0].text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


class Checks:
    def __init__(self):
        self.passed = 0

    def __call__(self, condition, what, detail):
        if not condition:
            print(f"FAILED: {what}: {detail}", file=sys.stderr)
            raise SystemExit(1)
        self.passed += 1


async def connected(session):
    """Upstreams connect after the gateway answers: wait until no group is still connecting."""
    for _ in range(600):
        groups = payload(await session.call_tool("list_tool_groups", {}))
        if all("unavailable" not in g for g in groups["groups"]):
            return
        await asyncio.sleep(0.05)
    raise SystemExit(f"FAILED: sources never connected: {groups}")


class HandshakeSession:
    """One MCP session on the initialize handshake (the SDK's `ClientSession`) over streamable
    HTTP, with extra request `headers` and the session's callbacks as `options`."""

    def __init__(self, url: str, headers=None, **options):
        self.url, self.headers, self.options = url, headers or {}, options

    async def __aenter__(self):
        import httpx2
        import mcp
        from mcp.client.streamable_http import streamable_http_client

        self.http = httpx2.AsyncClient(headers=self.headers, timeout=60)
        self.transport = streamable_http_client(self.url, http_client=self.http)
        read, write = await self.transport.__aenter__()
        self.session = mcp.ClientSession(read, write, **self.options)
        await self.session.__aenter__()
        await self.session.initialize()
        return self.session

    async def __aexit__(self, *exc):
        await self.session.__aexit__(*exc)
        await self.transport.__aexit__(*exc)
        await self.http.aclose()
