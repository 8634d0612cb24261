"""Memory of `toolsearch serve --http` across many MCP sessions (legacy handshake, each session
initialized and one discover_tools called): prints the gateway's resident memory idle, with
1,000 sessions open, after closing them (and 10 s later), after 12,000 more opened and closed
(and 10 s later), and after 2,000 more left open (over `[limits] max_http_sessions`, default 1000, the rest are refused with 503).

Usage: scripts/http-sessions-memory.py PID URL [GROUP/TOOL [ROUNDS]]
(the Python of target/pyenv: it needs httpx2). With GROUP/TOOL each session also calls that tool
(no arguments but `text`), which opens its own upstream connection when the source has
`context_headers` or `per_session`; ROUNDS (default 12) thousands are opened and closed after the
first thousand.
"""
import asyncio, sys, time
import httpx2 as httpx

PID, URL = int(sys.argv[1]), sys.argv[2]
CALL = sys.argv[3].split("/", 1) if len(sys.argv) > 3 else None
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 12
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mem", "version": "1"}}}
H = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", "MCP-Protocol-Version": "2025-06-18"}

def rss():
    for l in open(f"/proc/{PID}/status"):
        if l.startswith("VmRSS"):
            return int(l.split()[1]) // 1024
async def open_session(c):
    r = await c.post(URL, json=INIT, headers=H)
    if r.status_code == 503:
        return None
    sid = r.headers["mcp-session-id"]
    await c.post(URL, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={**H, "Mcp-Session-Id": sid})
    r = await c.post(URL, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "discover_tools", "arguments": {"query": "refund"}}}, headers={**H, "Mcp-Session-Id": sid})
    assert r.status_code == 200, r.text
    if CALL:
        call = {"group": CALL[0], "tool": CALL[1], "arguments": {"text": "hi"}}
        r = await c.post(URL, json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "call_tool", "arguments": call}}, headers={**H, "Mcp-Session-Id": sid})
        assert r.status_code == 200 and '"isError":true' not in r.text.replace(" ", ""), r.text
    return sid
async def close(c, sid):
    if sid is None:
        return
    await c.delete(URL, headers={**H, "Mcp-Session-Id": sid})
async def main():
    limits = httpx.Limits(max_connections=100)
    async with httpx.AsyncClient(limits=limits, timeout=60) as c:
        print("idle", rss(), "MB", flush=True)
        sids = []
        for i in range(0, 1000, 100):
            sids += await asyncio.gather(*[open_session(c) for _ in range(100)])
        print("1000 open", rss(), "MB", flush=True)
        await asyncio.gather(*[close(c, s) for s in sids])
        print("1000 closed", rss(), "MB", flush=True)
        await asyncio.sleep(10)
        print("1000 closed, 10 s later", rss(), "MB", flush=True)
        for round in range(ROUNDS):
            for i in range(0, 1000, 100):
                sids = await asyncio.gather(*[open_session(c) for _ in range(100)])
                await asyncio.gather(*[close(c, s) for s in sids])
            print(f"{(round+1)*1000} more opened+closed", rss(), "MB", flush=True)
        if ROUNDS:
            await asyncio.sleep(10)
            print(f"{ROUNDS*1000} more opened+closed, 10 s later", rss(), "MB", flush=True)
        left = []
        for i in range(0, 2000, 100):
            left += await asyncio.gather(*[open_session(c) for _ in range(100)])
        refused = sum(1 for s in left if s is None)
        print(f"2000 more left open ({refused} refused with 503)", rss(), "MB", flush=True)
asyncio.run(main())
