"""Who is calling: drive `toolsearch serve --http` as several callers with the official Python
MCP SDK's `Client`, over streamable HTTP with bearer tokens.

Usage:
  identity_client.py keys DIR          write DIR/jwks.json (the gateway's), DIR/key.pem (signs
                                       good tokens) and DIR/other.pem (signs forged ones)
  identity_client.py check URL DIR     every check below against a running gateway
  identity_client.py rate URL          the rate-limit checks against a gateway with a tight rate
  identity_client.py approval URL      approval-gated tools asked about through the SDK's
                                       elicitation callback: the `Client` on protocol 2026-07-28
                                       (`input_required`, then the repeated call) and
                                       `ClientSession` on the initialize handshake (an
                                       elicitation request during the call); prints the number
                                       of `count` calls that were accepted
  identity_client.py approval-stdio BINARY CONFIG
                                       the same over stdio (`toolsearch serve`): ClientSession
                                       (elicitation during the call) and the Client (2026-07-28)

Tokens: ALICE_TOKEN and BOB_TOKEN in the environment ([[client]] entries); JWTs are signed
here with DIR/key.pem (issuer https://idp.test/, audience toolsearch).

Prints "N passed, 0 failed" and exits 0 when every check holds; exits 1 at the first failure.
"""

import asyncio
import base64
import json
import os
import sys
import time

import httpx2
import jwt
import mcp
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
import mcp.client.stdio
from mcp.client.streamable_http import streamable_http_client

from checks import Checks, HandshakeSession, payload

ISSUER = "https://idp.test/"
AUDIENCE = "toolsearch"


def b64(n: int) -> str:
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def keys(folder: str) -> int:
    os.makedirs(folder, exist_ok=True)
    jwks = {"keys": []}
    for name, kid in (("key", "k1"), ("other", "k2")):
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        with open(os.path.join(folder, f"{name}.pem"), "wb") as f:
            f.write(pem)
        if name == "key":
            numbers = key.public_key().public_numbers()
            jwks["keys"].append({"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                                 "n": b64(numbers.n), "e": b64(numbers.e)})
    with open(os.path.join(folder, "jwks.json"), "w") as f:
        json.dump(jwks, f)
    print("keys written")
    return 0


def token(folder: str, key: str = "key", kid: str = "k1", **claims) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "svc-1", "iat": now, "exp": now + 600}
    body.update(claims)
    with open(os.path.join(folder, f"{key}.pem"), "rb") as f:
        pem = f.read()
    return jwt.encode(body, pem, algorithm="RS256", headers={"kid": kid})


def unsigned(**claims) -> str:
    """An `alg: none` token."""
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "svc-1", "exp": now + 600}
    body.update(claims)
    return part({"alg": "none", "typ": "JWT"}) + "." + part(body) + "."


class Caller:
    """One caller's MCP session over HTTP with its bearer token."""

    def __init__(self, url: str, bearer: str, **options):
        self.url, self.bearer, self.options = url, bearer, options

    async def __aenter__(self):
        self.http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.bearer}"}, timeout=30)
        self.transport = streamable_http_client(self.url, http_client=self.http)
        self.client = mcp.Client(self.transport, **self.options)
        return await self.client.__aenter__()

    async def __aexit__(self, *exc):
        await self.client.__aexit__(*exc)
        await self.http.aclose()


async def call(client, name, arguments):
    return payload(await client.call_tool(name, arguments))


async def discovered(client):
    found = await call(client, "discover_tools", {"query": "", "limit": 10})
    return sorted(f"{t['group']}/{t['tool']}" for t in found["tools"])


async def initialize_status(url: str, bearer: str | None):
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if bearer is not None:
        headers["Authorization"] = f"Bearer {bearer}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    async with httpx2.AsyncClient(timeout=30) as http:
        r = await http.post(url, json=body, headers=headers)
        return r.status_code, r.headers.get("www-authenticate", "")


async def connected(client):
    for _ in range(600):
        groups = await call(client, "list_tool_groups", {})
        if all("unavailable" not in g for g in groups["groups"]):
            return
        await asyncio.sleep(0.05)
    raise SystemExit(f"FAILED: sources never connected: {groups}")


async def check(url: str, folder: str) -> int:
    check = Checks()
    alice_token, bob_token = os.environ["ALICE_TOKEN"], os.environ["BOB_TOKEN"]

    # No token, or a bad one: 401 pointing at the resource metadata, which is served.
    status, challenge = await initialize_status(url, None)
    check(status == 401 and "resource_metadata=" in challenge, "401 without a token", (status, challenge))
    metadata_url = challenge.split('resource_metadata="')[1].split('"')[0]
    check(metadata_url.endswith("/.well-known/oauth-protected-resource"), "metadata URL", metadata_url)
    async with httpx2.AsyncClient(timeout=30) as http:
        meta = (await http.get(metadata_url)).json()
    check(meta["authorization_servers"] == [ISSUER] and meta["bearer_methods_supported"] == ["header"]
          and meta["resource"].startswith("http://"), "resource metadata", meta)
    now = int(time.time())
    for what, bad in [
        ("a wrong client token", "not-a-token"),
        ("an expired JWT", token(folder, exp=now - 3600, iat=now - 7200)),
        ("a JWT signed by another key", token(folder, key="other")),
        ("a JWT for another audience", token(folder, aud="someone-else")),
        ("a JWT from another issuer", token(folder, iss="https://evil.test/")),
        ("an alg:none JWT", unsigned(team="ops")),
        ("a JWT not valid yet", token(folder, nbf=now + 3600)),
    ]:
        status, _ = await initialize_status(url, bad)
        check(status == 401, f"{what} refused", status)

    # The console admits admins only: a JWT whose admin claim is true, not a client without
    # `admin = true`, nor a JWT whose claim is false, another value, or absent.
    async with httpx2.AsyncClient(timeout=30) as http:
        async def console(bearer):
            headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
            return (await http.get(url.rstrip("/") + "/ui/", headers=headers)).status_code

        for what, bearer, status in [
            ("no token", None, 401),
            ("a forged JWT", token(folder, key="other", toolsearch_admin=True), 401),
            ("a client without admin = true", alice_token, 403),
            ("a JWT without the admin claim", token(folder), 403),
            ("a JWT whose admin claim is false", token(folder, toolsearch_admin=False), 403),
            ("a JWT whose admin claim is \"yes\"", token(folder, toolsearch_admin="yes"), 403),
            ("a JWT whose admin claim is true", token(folder, toolsearch_admin=True), 200),
            ("a JWT whose admin claim is \"true\"", token(folder, toolsearch_admin="true"), 200),
        ]:
            got = await console(bearer)
            check(got == status, f"the console for {what}", got)

    # Two callers with disjoint policies see disjoint catalogs and cannot reach each other's.
    async with Caller(url, alice_token) as alice, Caller(url, bob_token) as bob:
        await connected(alice)
        await connected(bob)
        a, b = await discovered(alice), await discovered(bob)
        check(a == ["everything/echo", "whoami/whoami"], "alice's catalog", a)
        check(b == ["everything/get-sum", "whoami/whoami"], "bob's catalog", b)
        hidden = await call(alice, "call_tool", {"group": "everything", "tool": "get-sum", "arguments": {"a": 1, "b": 2}})
        missing = await call(alice, "call_tool", {"group": "everything", "tool": "get-nothing", "arguments": {"a": 1, "b": 2}})
        check(hidden["error"] == "unknown_tool" and
              json.dumps(hidden).replace("get-sum", "X") == json.dumps(missing).replace("get-nothing", "X"),
              "a hidden tool answers as a missing one", (hidden, missing))
        found = await call(alice, "discover_tools", {"query": "get-sum"})
        check(found["total"] == 0 or all(t["tool"] != "get-sum" for t in found["tools"]),
              "a hidden tool's exact name finds nothing", found)
        echoed = await alice.call_tool("call_tool", {"group": "everything", "tool": "echo",
                                                     "arguments": {"message": "SECRET-ARG-VALUE"}})
        check(not echoed.is_error, "alice calls her own tool", echoed)

    # A JWT caller: its claims choose its policy.
    async with Caller(url, token(folder, team="ops", tenant_id="initech")) as ops:
        await connected(ops)
        found = await discovered(ops)
        check("everything/echo" in found and "everything/get-env" not in found
              and not any(t.startswith("whoami/") for t in found), "the JWT caller's catalog", found)

    # Each session's upstream connection carries its own caller's tenant, never another's.
    async def whoami(bearer, tenant):
        async with Caller(url, bearer) as c:
            seen = set()
            for _ in range(2):
                r = await call(c, "call_tool", {"group": "whoami", "tool": "whoami", "arguments": {}})
                text = r if isinstance(r, str) else json.dumps(r)
                seen.add(text.split(";")[0])
            return tenant, seen
    results = await asyncio.gather(*[
        whoami(alice_token if i % 2 == 0 else bob_token, "acme" if i % 2 == 0 else "globex")
        for i in range(12)
    ])
    crossings = [(t, s) for t, s in results if s != {f"tenant={t}"}]
    check(not crossings, "12 concurrent sessions, two tenants, zero crossings", results)

    # The audit log: a line per call, and no secret in it.
    audit_path = os.path.join(folder, "audit.jsonl")
    with open(audit_path) as f:
        text = f.read()
    lines = [json.loads(line) for line in text.splitlines()]
    check(all(set(line) == {"ts", "client", "group", "tool", "outcome", "ms"} for line in lines),
          "audit lines hold exactly ts, client, group, tool, outcome, ms", lines[:3])
    check({line["client"] for line in lines} >= {"alice", "bob"}, "audit names the clients", lines[:3])
    check(any(line["group"] == "everything" and line["tool"] == "echo" and line["outcome"] == "ok"
              and line["client"] == "alice" for line in lines), "audit records alice's echo", lines[:5])
    for secret in (alice_token, bob_token, "SECRET-ARG-VALUE", "acme", "globex"):
        check(secret not in text, "no secret in the audit log", secret)

    print(f"{check.passed} passed, 0 failed")
    return 0


async def rate(url: str) -> int:
    check = Checks()
    async with Caller(url, os.environ["ALICE_TOKEN"]) as alice, Caller(url, os.environ["BOB_TOKEN"]) as bob:
        answers = [await call(alice, "list_tool_groups", {}) for _ in range(4)]
        limited = [a for a in answers if a.get("error") == "rate_limited"]
        check(len(limited) >= 1 and limited[0]["retry_after_ms"] > 0, "alice is rate limited", answers)
        other = await call(bob, "list_tool_groups", {})
        check("groups" in other, "bob is unaffected", other)
    print(f"{check.passed} passed, 0 failed")
    return 0


class Person:
    """The elicitation callback: answers with the action it is told, and keeps every question."""

    def __init__(self):
        self.action, self.asked = "accept", []

    async def __call__(self, context, params):
        self.asked.append(params.message)
        return mcp.types.ElicitResult(action=self.action, content={} if self.action == "accept" else None)


def LegacyCaller(url: str, bearer: str, person):
    """One caller's session on the initialize handshake (`ClientSession`), over HTTP."""
    return HandshakeSession(url, {"Authorization": f"Bearer {bearer}"}, elicitation_callback=person)


PROGRAM = 'await call_tool(group="counter", tool="count", arguments={"note": "from a program"})'


async def approval(url: str) -> int:
    check = Checks()
    alice_token = os.environ["ALICE_TOKEN"]
    accepted = 0

    def count(arguments=None):
        return {"group": "counter", "tool": "count", "arguments": arguments or {}}

    # Protocol 2026-07-28: the call answers input_required; the SDK asks the person through the
    # callback and repeats the call with the answer.
    person = Person()
    async with Caller(url, alice_token, elicitation_callback=person) as alice:
        await connected(alice)
        check(alice.protocol_version == "2026-07-28", "the Client speaks 2026-07-28",
              alice.protocol_version)
        echoed = await call(alice, "call_tool", {"group": "everything", "tool": "echo",
                                                 "arguments": {"message": "refund 42 to acme"}})
        check("refund 42 to acme" in json.dumps(echoed), "accepted: the tool ran", echoed)
        check(len(person.asked) == 1 and '"echo" in group "everything"' in person.asked[0]
              and "refund 42 to acme" in person.asked[0],
              "the person saw the tool, its group and its arguments", person.asked)
        first = await call(alice, "call_tool", count({"note": "one"}))
        accepted += 1
        check(str(first).startswith("calls="), "accepted: count ran", first)
        ran_before = int(str(first).split("=")[1])
        for action in ("decline", "cancel"):
            person.action = action
            refused = await call(alice, "call_tool", count({"note": action}))
            check(refused["error"] == "denied" and action[:6] in refused["message"],
                  f"{action}: denied, saying so", refused)
        person.action = "accept"
        again = await call(alice, "call_tool", count({"note": "two"}))
        accepted += 1
        check(again == f"calls={ran_before + 1}", "the declined and cancelled calls never ran", again)
        asked = len(person.asked)
        hidden = await call(alice, "call_tool", {"group": "everything", "tool": "get-sum",
                                                 "arguments": {"a": 1, "b": 2}})
        check(hidden["error"] == "unknown_tool" and len(person.asked) == asked,
              "a hidden gated tool answers as unknown, and nobody is asked", hidden)
        plain = await call(alice, "list_tool_groups", {})
        check("groups" in plain and len(person.asked) == asked, "ungated calls ask nobody", plain)
        # A program cannot wait for another request: its gated call is denied, saying why.
        run = await call(alice, "run_code", {"code": PROGRAM})
        check(run["result"]["error"] == "denied" and "between requests" in run["result"]["message"]
              and len(person.asked) == asked, "2026-07-28: a program's gated call is denied", run)

    # A 2026-07-28 client that cannot ask (no elicitation callback): denied, saying why.
    async with Caller(url, alice_token) as mute:
        refused = await call(mute, "call_tool", count())
        check(refused["error"] == "denied" and "cannot be asked" in refused["message"],
              "a client that cannot ask: denied", refused)

    # The initialize handshake: the gateway sends an elicitation request during the call.
    legacy_person = Person()
    async with LegacyCaller(url, alice_token, legacy_person) as legacy:
        check(legacy.protocol_version != "2026-07-28", "ClientSession is on the handshake",
              legacy.protocol_version)
        ran = payload(await legacy.call_tool("call_tool", count({"note": "legacy"})))
        accepted += 1
        check(str(ran).startswith("calls=") and len(legacy_person.asked) == 1
              and '"count" in group "counter"' in legacy_person.asked[0] and "legacy" in legacy_person.asked[0],
              "legacy: asked during the call, accepted, ran", (ran, legacy_person.asked))
        legacy_person.action = "decline"
        refused = payload(await legacy.call_tool("call_tool", count({"note": "no"})))
        check(refused["error"] == "denied" and "declined" in refused["message"], "legacy: declined", refused)
        # On the handshake a program's gated call is asked about while the program waits.
        legacy_person.action = "accept"
        run = payload(await legacy.call_tool("run_code", {"code": PROGRAM}))
        accepted += 1
        check(run["result"]["content"][0]["text"].startswith("calls=") and len(legacy_person.asked) == 3
              and "from a program" in legacy_person.asked[2], "legacy: a program's gated call, asked and run", run)

    print(f"{check.passed} passed, 0 failed; {accepted} accepted")
    return 0


async def approval_stdio(binary: str, config: str) -> int:
    check = Checks()
    params = mcp.StdioServerParameters(command=binary, args=["serve", "--config", config])
    count = {"group": "counter", "tool": "count", "arguments": {"note": "over stdio"}}
    person = Person()
    async with mcp.client.stdio.stdio_client(params) as (read, write):
        async with mcp.ClientSession(read, write, elicitation_callback=person) as session:
            await session.initialize()
            await connected(session)
            ran = payload(await session.call_tool("call_tool", count))
            check(str(ran).startswith("calls=") and len(person.asked) == 1 and "over stdio" in person.asked[0],
                  "stdio handshake: asked during the call, accepted, ran", (ran, person.asked))
            person.action = "decline"
            refused = payload(await session.call_tool("call_tool", count))
            check(refused["error"] == "denied", "stdio handshake: declined", refused)
    person = Person()
    async with mcp.Client(params, elicitation_callback=person) as client:
        check(client.protocol_version == "2026-07-28", "stdio Client on 2026-07-28", client.protocol_version)
        await connected(client)
        ran = await call(client, "call_tool", count)
        check(str(ran).startswith("calls=") and len(person.asked) == 1, "stdio 2026-07-28: accepted, ran",
              (ran, person.asked))
        person.action = "decline"
        refused = await call(client, "call_tool", count)
        check(refused["error"] == "denied", "stdio 2026-07-28: declined", refused)
    print(f"{check.passed} passed, 0 failed")
    return 0


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "keys":
        sys.exit(keys(sys.argv[2]))
    if mode == "check":
        sys.exit(asyncio.run(check(sys.argv[2], sys.argv[3])))
    if mode == "rate":
        sys.exit(asyncio.run(rate(sys.argv[2])))
    if mode == "approval":
        sys.exit(asyncio.run(approval(sys.argv[2])))
    if mode == "approval-stdio":
        sys.exit(asyncio.run(approval_stdio(sys.argv[2], sys.argv[3])))
    print(f"unknown mode {mode!r}", file=sys.stderr)
    sys.exit(2)
