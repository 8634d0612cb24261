"""Load, fault and fuzz soak of `toolsearch serve --http` (and of `serve` over stdio), loopback
only and bounded: every phase has a fixed size, and the whole run takes a few minutes.

Usage: target/pyenv/bin/python scripts/soak.py [--binary target/release/toolsearch]
           [--sessions 1000] [--calls 5] [--fault-seconds 24] [--mutations 10000]
           [--lines 5000] [--call-timeout-ms 3000] [--phases load,owners,faults,fuzz,stdio,fds,logs]

(the Python of target/pyenv: it needs httpx2, uvicorn and the MCP SDK). It starts its own
upstream — an MCP server on the Python SDK, served by uvicorn with its default 5 s keep-alive,
whose `whoami` tool answers with the tenant header its request carried — and a gateway in
front of it with two clients of two tenants (`X-Tenant-ID` from the caller's claims through
`context_headers`) and an upstream key from the environment, logging at `trace`. Phases:

  load    SESSIONS sessions at once, half of each tenant, CALLS calls each: no answer may carry
          the other tenant; latency, resident memory at the peak and 10 s after closing
  owners  the other tenant's token on a session: POST, GET and DELETE refused as unknown (404)
  faults  100 sessions calling without pause; the upstream is killed (-9) and restarted on its
          port, later frozen (SIGSTOP) past the call timeout and thawed: what the callers got,
          how long, and whether every session recovers within a quarter of the phase of the
          upstream listening again, and of its thaw (frozen for a quarter of the phase: make
          it longer than the call timeout to see timeouts)
  fuzz    MUTATIONS mutated JSON-RPC requests on live sessions: no 5xx, every error answering a
          request is a JSON-RPC error, the gateway answers afterwards
  stdio   LINES mutated lines to `serve` over stdio, with a ping every 50: every line it writes
          is JSON, every ping answered, the process alive at the end
  fds     a gateway with 64 open files and 150 silent connections: CPU and log written while
          exhausted, and how soon it answers again
  logs    the trace log of all the above holds no token, upstream key, argument or result

Prints one line per check and a summary; exits 1 when a check fails.
"""

import argparse
import asyncio
import json
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALICE, BOB = "soak-alice-token-5d1e", "soak-bob-token-c07a"
UPSTREAM_KEY = "soak-upstream-key-93f2"
ARGUMENT = "soak-argument-1f4b"
RESULT = "soak-result-a62c"
TENANT = {ALICE: "acme", BOB: "globex"}
PROTOCOL = "2025-06-18"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
           "MCP-Protocol-Version": PROTOCOL}
FAILED = []


def check(ok, what, detail=""):
    print(("PASS " if ok else "FAIL ") + what + (f" — {detail}" if detail and not ok else ""), flush=True)
    if not ok:
        FAILED.append(what)


# ---------------------------------------------------------------- the upstream


def serve_upstream(port):
    """The upstream process: `whoami` says which tenant asked and whether the key arrived."""
    import uvicorn
    from mcp.server.mcpserver import Context, MCPServer

    app = MCPServer("soak-upstream")

    @app.tool()
    async def whoami(note: str, ctx: Context) -> str:
        """Says which tenant is asking (its X-Tenant-ID header)."""
        headers = ctx.headers or {}
        key = "key-ok" if headers.get("x-api-key") == os.environ["SOAK_UPSTREAM_KEY"] else "key-wrong"
        return f"tenant={headers.get('x-tenant-id')} {key} {RESULT} {len(note)}"

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    server = uvicorn.Server(uvicorn.Config(app.streamable_http_app(), log_level="warning"))
    asyncio.run(server.serve(sockets=[sock]))


def cpu_seconds(pid):
    """The CPU time (user + system) process `pid` has used."""
    rest = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds=20):
    end = time.time() + seconds
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


class Upstream:
    def __init__(self, port):
        self.port = port
        self.start()

    def start(self):
        env = {**os.environ, "SOAK_UPSTREAM_KEY": UPSTREAM_KEY}
        self.proc = subprocess.Popen([sys.executable, __file__, "--upstream", str(self.port)], env=env)
        if not wait_port(self.port):
            raise SystemExit("the upstream did not start")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# ---------------------------------------------------------------- the gateway


class Gateway:
    def __init__(self, binary, config, port, log, open_files=None):
        env = {**os.environ, "SOAK_ALICE": ALICE, "SOAK_BOB": BOB, "SOAK_UPSTREAM_KEY": UPSTREAM_KEY,
               "TOOLSEARCH_LOG": "trace"}
        limit = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))) if open_files else None
        self.log = log
        self.proc = subprocess.Popen([binary, "serve", "--config", str(config), "--http", f"127.0.0.1:{port}"],
                                     env=env, stdout=subprocess.DEVNULL, stderr=open(log, "ab"), preexec_fn=limit)
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.port = port
        if not wait_port(port):
            raise SystemExit(f"the gateway did not start: {Path(log).read_text()[-2000:]}")

    def rss(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024

    def cpu(self):
        return cpu_seconds(self.proc.pid)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def write_config(directory, upstream_port, extra="", call_timeout_ms=3000):
    text = f"""
[[client]]
name = "alice"
token = "${{env:SOAK_ALICE}}"
claims = {{ tenant_id = "acme" }}

[[client]]
name = "bob"
token = "${{env:SOAK_BOB}}"
claims = {{ tenant_id = "globex" }}

[limits]
call_timeout_ms = {call_timeout_ms}
{extra}

[[source]]
name = "whoami"
url = "http://127.0.0.1:{upstream_port}/mcp"
headers = {{ "X-Api-Key" = "${{env:SOAK_UPSTREAM_KEY}}" }}
context_headers = {{ "X-Tenant-ID" = "identity.tenant_id" }}
group = "whoami"
description = "Says which tenant is asking"
"""
    path = Path(directory) / "gateway.toml"
    path.write_text(text)
    return path


# ---------------------------------------------------------------- an HTTP client


def body_of(response):
    """The JSON-RPC message an answer carries (plain JSON or the first SSE data), or None."""
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                try:
                    return json.loads(line[5:])
                except ValueError:
                    return None
        return None
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


class Session:
    def __init__(self, client, url, token):
        self.client, self.url, self.token, self.sid, self.next_id = client, url, token, None, 10

    def headers(self, token=None, sid=None):
        h = {**HEADERS, "Authorization": f"Bearer {token or self.token}"}
        if sid or self.sid:
            h["Mcp-Session-Id"] = sid or self.sid
        return h

    async def open(self):
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}}
        r = await self.client.post(self.url, json=init, headers=self.headers())
        if r.status_code != 200:
            return False
        self.sid = r.headers.get("mcp-session-id")
        await self.client.post(self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers())
        return True

    async def call(self):
        """One `whoami` call through `call_tool`: (seconds, text of the result or the error)."""
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
               "params": {"name": "call_tool", "arguments": {"group": "whoami", "tool": "whoami", "arguments": {"note": ARGUMENT}}}}
        t = time.perf_counter()
        try:
            r = await self.client.post(self.url, json=msg, headers=self.headers())
        except Exception as e:  # noqa: BLE001 — a transport failure is an outcome here
            return time.perf_counter() - t, f"transport: {type(e).__name__}"
        took = time.perf_counter() - t
        m = body_of(r)
        if not m or "result" not in m:
            return took, f"http {r.status_code}: {r.text[:200]}"
        return took, " ".join(c.get("text", "") for c in m["result"].get("content", []))

    async def close(self):
        if self.sid:
            await self.client.delete(self.url, headers=self.headers())


def outcome(text):
    if text.startswith("tenant="):
        return "ok"
    for code in ("unavailable", "timeout", "tool_failed", "denied", "rate_limited"):
        if f'"{code}"' in text or f"'{code}'" in text:
            return code
    return "other"


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


# ---------------------------------------------------------------- phases


async def phase_load(gw, upstream, n, calls, summary):
    import httpx2 as httpx

    idle = gw.rss()
    cpu = (gw.cpu(), cpu_seconds(upstream.proc.pid))
    peak = idle
    limits = httpx.Limits(max_connections=200)
    async with httpx.AsyncClient(limits=limits, timeout=60) as c:
        sessions = [Session(c, gw.url, ALICE if i % 2 == 0 else BOB) for i in range(n)]
        t0 = time.time()
        for i in range(0, n, 100):
            opened = await asyncio.gather(*[s.open() for s in sessions[i:i + 100]])
            check(all(opened), f"load: sessions {i}..{i + 99} opened", opened.count(False))
        latencies, crossings, failures = [], [], []

        async def run(s):
            for _ in range(calls):
                took, text = await s.call()
                latencies.append(took)
                want = f"tenant={TENANT[s.token]} key-ok"
                if not text.startswith(want):
                    (crossings if text.startswith("tenant=") else failures).append(text[:200])

        await asyncio.gather(*[run(s) for s in sessions])
        peak = max(peak, gw.rss())
        elapsed = time.time() - t0
        cpu = (gw.cpu() - cpu[0], cpu_seconds(upstream.proc.pid) - cpu[1])
        check(not crossings, f"load: {n * calls} calls of two tenants, none answered for the other tenant", crossings[:3])
        check(not failures, f"load: every call answered", f"{len(failures)} failed, e.g. {failures[:3]}")
        await asyncio.gather(*[s.close() for s in sessions])
    await asyncio.sleep(10)
    after = gw.rss()
    summary["load"] = (f"{n} sessions (two tenants) × {calls} calls in {elapsed:.1f} s: crossings {len(crossings)}, "
                       f"failed {len(failures)}; call p50 {percentile(latencies, .5) * 1000:.1f} ms, "
                       f"p99 {percentile(latencies, .99) * 1000:.1f} ms; CPU: gateway {cpu[0]:.1f} s, upstream {cpu[1]:.1f} s; resident idle {idle} MB, "
                       f"open {peak} MB, 10 s after closing {after} MB")


async def phase_owners(gw, summary):
    import httpx2 as httpx

    async with httpx.AsyncClient(timeout=30) as c:
        alice = Session(c, gw.url, ALICE)
        await alice.open()
        bob_headers = alice.headers(token=BOB)
        msg = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
        posted = await c.post(gw.url, json=msg, headers=bob_headers)
        got = await c.get(gw.url, headers={**bob_headers, "Accept": "text/event-stream"})
        deleted = await c.delete(gw.url, headers=bob_headers)
        check(posted.status_code == 404 and (body_of(posted) or {}).get("id") == 7,
              "owners: the other tenant's POST on a session is refused as unknown (404, JSON-RPC error)", posted.text[:200])
        check(got.status_code == 404, "owners: the other tenant's GET is refused", got.status_code)
        check(deleted.status_code == 404, "owners: the other tenant's DELETE is refused", deleted.status_code)
        _, text = await alice.call()
        check(text.startswith("tenant=acme"), "owners: the owner's session still works", text[:200])
        await alice.close()
    summary["owners"] = (f"the other tenant on a session: POST {posted.status_code}, GET {got.status_code}, "
                         f"DELETE {deleted.status_code}; the owner's next call {outcome(text)}")


async def phase_faults(gw, upstream, seconds, summary):
    import httpx2 as httpx

    events = []  # (time, session index, outcome)
    quarter = seconds * 0.25
    marks = {}  # what happened to the upstream, when
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=200), timeout=30) as c:
        sessions = [Session(c, gw.url, ALICE if i % 2 == 0 else BOB) for i in range(100)]
        await asyncio.gather(*[s.open() for s in sessions])
        start = time.time()
        done = asyncio.Event()

        async def run(i, s):
            while not done.is_set():
                _, text = await s.call()
                events.append((time.time(), i, outcome(text)))

        async def faults():
            # The timeline follows the upstream, not the clock: the sessions get a quarter of
            # the phase from the moment the restarted upstream listens again (a slow start of
            # the upstream is not the gateway's recovery), and so on.
            await asyncio.sleep(seconds * 0.15)
            marks["kill"] = time.time()
            upstream.proc.send_signal(signal.SIGKILL)
            upstream.proc.wait()
            await asyncio.sleep(seconds * 0.1)
            marks["restart"] = time.time()
            await asyncio.to_thread(upstream.start)
            marks["back"] = time.time()
            await asyncio.sleep(quarter)
            marks["freeze"] = time.time()
            upstream.proc.send_signal(signal.SIGSTOP)
            await asyncio.sleep(quarter)
            marks["thaw"] = time.time()
            upstream.proc.send_signal(signal.SIGCONT)
            await asyncio.sleep(quarter)
            marks["stop"] = time.time()
            done.set()

        await asyncio.gather(faults(), *[run(i, s) for i, s in enumerate(sessions)])
        await asyncio.gather(*[s.close() for s in sessions])

    def window(a, b):
        got = {}
        for t, _, o in events:
            if a <= t < b:
                got[o] = got.get(o, 0) + 1
        return got

    def recovered_after(t0, t1):
        """Seconds from t0 until every session had an ok answer after it (before t1)."""
        first = {}
        for t, i, o in events:
            if t0 <= t < t1 and o == "ok" and i not in first:
                first[i] = t
        return (max(first.values()) - t0) if len(first) == len(sessions) else None

    kill, back, freeze, thaw, stop = (marks[k] for k in ("kill", "back", "freeze", "thaw", "stop"))
    killed = window(kill, back)
    bad = [t for t, _, o in events if kill <= t < freeze and o != "ok"]
    after_restart = recovered_after(back, freeze)
    after_thaw = recovered_after(thaw, stop)
    frozen = window(freeze, thaw)
    other = sum(n for o, n in window(start, stop).items() if o == "other")
    check(after_restart is not None, "faults: every session answers again after the upstream is restarted",
          window(back, freeze))
    check(after_thaw is not None, "faults: every session answers again after the upstream is thawed",
          window(thaw, stop))
    check(other == 0, "faults: every failed call is an `unavailable` or `timeout` answer", other)

    def seconds_or_none(v):
        return v if v is None else round(v, 2)

    summary["faults"] = (f"100 sessions calling for {stop - start:.1f} s: killed (-9) → {killed}; the upstream "
                         f"listened again {back - marks['restart']:.2f} s after its restart; non-ok answers until "
                         f"{(max(bad) - back) if bad else 0:.2f} s after that; every session ok again "
                         f"{seconds_or_none(after_restart)} s after the upstream was back; "
                         f"frozen {thaw - freeze:.1f} s → {frozen}; every session ok again "
                         f"{seconds_or_none(after_thaw)} s after the thaw")


def mutate(rng, value, depth=0):
    """A JSON value changed in one random way (or left alone, now and then)."""
    choice = rng.random()
    if isinstance(value, dict) and value and choice < 0.5:
        key = rng.choice(list(value))
        out = dict(value)
        r = rng.random()
        if r < 0.3:
            del out[key]
        elif r < 0.8:
            out[key] = mutate(rng, out[key], depth + 1)
        else:
            out[rng.choice(["extra", "", "\u0000", "id", "method" * 50])] = rng.choice([None, 1, "x", [], {}])
        return out
    if isinstance(value, list) and value and choice < 0.5:
        out = list(value)
        out[rng.randrange(len(out))] = mutate(rng, out[0], depth + 1)
        return out
    pool = [None, True, 0, -1, 2**63, 1.5e308, "", "x" * rng.choice([1, 1000, 100000]), "\ud7ff\u202e",
            [], {}, [[[[[]]]]], {"a": {"b": {"c": {}}}}, "tools/call", "initialize", "2.0", "1.0"]
    return rng.choice(pool)


def mutated_request(rng, sid, next_id):
    templates = [
        {"jsonrpc": "2.0", "id": next_id, "method": "tools/call",
         "params": {"name": "call_tool", "arguments": {"group": "whoami", "tool": "whoami", "arguments": {"note": "x"}}}},
        {"jsonrpc": "2.0", "id": next_id, "method": "tools/call",
         "params": {"name": "discover_tools", "arguments": {"query": "tenant", "limit": 3}}},
        {"jsonrpc": "2.0", "id": next_id, "method": "tools/list", "params": {}},
        {"jsonrpc": "2.0", "id": next_id, "method": "ping"},
        {"jsonrpc": "2.0", "id": next_id, "method": "initialize",
         "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": next_id}},
    ]
    message = rng.choice(templates)
    kind = rng.random()
    headers = {**HEADERS, "Authorization": f"Bearer {rng.choice([ALICE, BOB])}", "Mcp-Session-Id": sid}
    if kind < 0.6:
        message = mutate(rng, message)
        body = json.dumps(message).encode()
    elif kind < 0.75:
        body = bytearray(json.dumps(message).encode())
        for _ in range(rng.randint(1, 4)):
            body[rng.randrange(len(body))] = rng.randrange(256)
        body = bytes(body)
    elif kind < 0.85:
        body = json.dumps(message).encode()[: rng.randrange(1, 40)]
    else:
        body = json.dumps(message).encode()
        header = rng.choice(["Content-Type", "Accept", "Mcp-Session-Id", "MCP-Protocol-Version", "Authorization"])
        headers[header] = rng.choice(["", "text/plain", "nope", "1999-01-01", "Bearer wrong", "\t"])
    return body, headers


def is_request(body):
    try:
        m = json.loads(body)
    except ValueError:
        return None
    if isinstance(m, dict) and "method" in m and "id" in m and m.get("id") is not None:
        return m["id"]
    return None


async def phase_fuzz(gw, count, summary):
    import httpx2 as httpx

    rng = random.Random(37)
    statuses, plain, server_errors, transport = {}, [], [], []
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=50), timeout=30) as c:
        owners = [Session(c, gw.url, ALICE), Session(c, gw.url, BOB)]
        for s in owners:
            await s.open()

        async def one(i):
            sid = owners[i % 2].sid if rng.random() < 0.9 else rng.choice(["", "nope", "x" * 300])
            body, headers = mutated_request(rng, sid, 1000 + i)
            try:
                r = await c.post(gw.url, content=body, headers=headers)
            except httpx.LocalProtocolError:  # the client itself refused the mutated headers
                statuses["not sent"] = statuses.get("not sent", 0) + 1
                return
            except Exception as e:  # noqa: BLE001 — counted: the gateway closed on us
                transport.append(f"{type(e).__name__}: {e}"[:200])
                return
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            if r.status_code >= 500:
                server_errors.append((r.status_code, body[:100], r.text[:200]))
            if r.status_code >= 400 and is_request(body) is not None:
                m = body_of(r)
                if not (isinstance(m, dict) and "error" in m and m.get("jsonrpc") == "2.0"):
                    plain.append((r.status_code, r.text[:120]))

        for i in range(0, count, 50):
            await asyncio.gather(*[one(j) for j in range(i, min(count, i + 50))])
        alive = Session(c, gw.url, ALICE)
        opened = await alive.open()
        _, text = await alive.call() if opened else (0, "")
        for s in owners + [alive]:
            await s.close()
    check(not server_errors, f"fuzz: {count} mutated requests, no 5xx", server_errors[:3])
    check(not plain, "fuzz: every HTTP error answering a request carries a JSON-RPC error", plain[:3])
    check(not transport, "fuzz: no connection dropped without an answer", transport[:3])
    check(text.startswith("tenant=acme"), "fuzz: the gateway serves a new session afterwards", text[:200])
    summary["fuzz"] = (f"{count} mutated requests: statuses {dict(sorted(statuses.items(), key=str))}; 5xx {len(server_errors)}; "
                       f"non-JSON-RPC errors to requests {len(plain)}; dropped connections {len(transport)}")


def phase_stdio(binary, directory, count, summary):
    config = Path(directory) / "stdio.toml"
    config.write_text(f'[[source]]\nname = "examples"\ncatalog = {json.dumps(str(ROOT / "examples/catalog.json"))}\n')
    log = open(Path(directory) / "stdio.log", "wb")
    proc = subprocess.Popen([binary, "serve", "--config", str(config)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=log, env={**os.environ, "TOOLSEARCH_LOG": "warn"})
    lines, bad = [], []

    def reader():
        for raw in proc.stdout:
            try:
                lines.append(json.loads(raw))
            except ValueError:
                bad.append(raw[:100])

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    send = lambda m: proc.stdin.write((m if isinstance(m, str) else json.dumps(m)).encode() + b"\n")
    send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
          "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}})
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    rng = random.Random(38)
    pings = 0
    try:
        for i in range(count):
            if i % 50 == 0:
                send({"jsonrpc": "2.0", "id": f"ping-{pings}", "method": "ping"})
                pings += 1
            body, _ = mutated_request(rng, "", 100000 + i)
            text = body.decode("utf-8", "replace").replace("\n", " ")
            send(text)
        proc.stdin.flush()
    except BrokenPipeError:
        pass
    end = time.time() + 20
    answered = lambda: sum(1 for m in lines if isinstance(m, dict) and str(m.get("id", "")).startswith("ping-"))
    while time.time() < end and answered() < pings:
        time.sleep(0.1)
    alive = proc.poll() is None
    proc.stdin.close()
    proc.wait(10)
    check(alive, f"stdio: alive after {count} mutated lines")
    check(answered() == pings, f"stdio: every ping answered among them", f"{answered()} of {pings}")
    check(not bad, "stdio: every line written is JSON", bad[:3])
    summary["stdio"] = (f"{count} mutated lines and {pings} pings: alive {alive}; pings answered {answered()}; "
                        f"lines written {len(lines)}, not JSON {len(bad)}")


def phase_fds(binary, directory, upstream_port, summary):
    config = write_config(Path(directory), upstream_port, "http_header_timeout_ms = 2000")
    port = free_port()
    log = Path(directory) / "fds.log"
    gw = Gateway(binary, config, port, log, open_files=64)
    try:
        log_before = log.stat().st_size
        cpu_before = gw.cpu()
        silent = []
        for _ in range(150):
            try:
                silent.append(socket.create_connection(("127.0.0.1", port), timeout=1))
            except OSError:
                break
        time.sleep(5)
        cpu = gw.cpu() - cpu_before
        written = log.stat().st_size - log_before
        t = time.time()
        answered = None
        while time.time() - t < 20:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=2)
                s.settimeout(2)
                s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    answered = time.time() - t
                    break
            except OSError:
                time.sleep(0.1)
        for s in silent:
            s.close()
    finally:
        gw.stop()
    check(cpu < 1.0, "fds: not spinning while its open files are exhausted", f"{cpu:.2f} s CPU in 5 s")
    check(written < 100_000, "fds: quiet while exhausted", f"{written} bytes of log in 5 s")
    check(answered is not None, "fds: answers again (silent connections closed at the header timeout)")
    summary["fds"] = (f"64 open files, {len(silent)} silent connections: {cpu:.2f} s CPU and {written} bytes of log "
                      f"(trace) in 5 s; /healthz answered {answered if answered is None else round(answered, 2)} s later")


def phase_logs(logs, summary):
    text = b"".join(Path(p).read_bytes() for p in logs if Path(p).exists())
    found = [s for s in (ALICE, BOB, UPSTREAM_KEY, ARGUMENT, RESULT) if s.encode() in text]
    check(not found, "logs: no token, upstream key, argument or result in the trace logs", found)
    summary["logs"] = f"{len(text) // 1024} KB of trace logs: secrets, arguments or results found {found or 'none'}"


# ---------------------------------------------------------------- main


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default=str(ROOT / "target/release/toolsearch"))
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--fault-seconds", type=float, default=24)
    parser.add_argument("--mutations", type=int, default=10000)
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--call-timeout-ms", type=int, default=3000)
    parser.add_argument("--phases", default="load,owners,faults,fuzz,stdio,fds,logs")
    parser.add_argument("--upstream", type=int, help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.upstream:
        return serve_upstream(a.upstream)
    phases = a.phases.split(",")
    summary = {}
    with tempfile.TemporaryDirectory(prefix="toolsearch-soak-") as d:
        upstream = Upstream(free_port())
        log = Path(d) / "gateway.log"
        config = write_config(d, upstream.port, call_timeout_ms=a.call_timeout_ms)
        gw = Gateway(a.binary, config, free_port(), log)
        try:
            if "load" in phases:
                asyncio.run(phase_load(gw, upstream, a.sessions, a.calls, summary))
            if "owners" in phases:
                asyncio.run(phase_owners(gw, summary))
            if "faults" in phases:
                asyncio.run(phase_faults(gw, upstream, a.fault_seconds, summary))
            if "fuzz" in phases:
                asyncio.run(phase_fuzz(gw, a.mutations, summary))
            check(gw.proc.poll() is None, "the gateway is still running")
        finally:
            gw.stop()
            upstream.stop()
        if "stdio" in phases:
            phase_stdio(a.binary, d, a.lines, summary)
        if "fds" in phases:
            upstream = Upstream(upstream.port)
            try:
                phase_fds(a.binary, d, upstream.port, summary)
            finally:
                upstream.stop()
        if "logs" in phases:
            phase_logs([log, Path(d) / "fds.log"], summary)
    print()
    for phase, line in summary.items():
        print(f"- **{phase}**: {line}")
    print(f"\n{len(FAILED)} checks failed" if FAILED else "\nevery check passed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
