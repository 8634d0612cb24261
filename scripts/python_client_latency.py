"""Latency of control calls through `toolsearch serve --http` with the official Python SDK's
newest client (`mcp.Client` over streamable HTTP), and how many TCP connections it opened.

Usage: target/pyenv/bin/python scripts/python_client_latency.py URL [CALLS]

The client stops reading an SSE answer at its response, so when every answer is a stream it
cannot reuse its connection; answered as plain JSON, it keeps one. Prints one JSON line:
{"calls", "p50_ms", "p99_ms", "connections"} (connections = distinct local ports seen).
"""

import asyncio
import json
import statistics
import sys
import time

import httpx2
import mcp
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, calls: int) -> None:
    ports = set()

    async def note(response):
        stream = response.extensions.get("network_stream")
        if stream is not None:
            address = stream.get_extra_info("client_addr")
            if address:
                ports.add(address[1])

    async with httpx2.AsyncClient(timeout=30, event_hooks={"response": [note]}) as http:
        async with mcp.Client(streamable_http_client(url, http_client=http)) as client:
            for _ in range(20):  # warm up
                await client.call_tool("list_tool_groups", {})
            ports.clear()
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                await client.call_tool("discover_tools", {"query": "refund a payment", "limit": 3})
                times.append((time.perf_counter() - started) * 1000)
    times.sort()
    print(json.dumps({
        "calls": calls,
        "p50_ms": round(statistics.median(times), 3),
        "p99_ms": round(times[int(len(times) * 0.99) - 1], 3),
        "connections": len(ports),
    }))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 500))
