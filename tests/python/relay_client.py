"""What an upstream asks of a client goes to the client whose call caused it, through the
gateway's controls, with the official Python SDK's `ClientSession` (the initialize handshake)
over streamable HTTP.

Usage: relay_client.py URL

The gateway serves tests/mcp-servers/conformance-server.mjs twice: group `shared` (one
connection for every session, `sampling = false`) and group `own` (`per_session = true`,
CodeAct may call it); and tests/python/upstream_server.py over HTTP as group `asker` (protocol
2026-07-28: it asks in `input_required` answers). Three sessions: A and B declare elicitation, sampling and logging; C
declares nothing; then a client on protocol 2026-07-28, asked through `input_required`. Prints "N passed, 0 failed" and exits 0 when every check holds.
"""

import asyncio
import sys

import mcp

from checks import Checks, HandshakeSession, connected


class Person:
    """A session's person and model: answers elicitations and sampling, keeps what it saw."""

    def __init__(self, name):
        self.name, self.asked, self.sampled, self.logs = name, [], [], []
        self.while_asked = None

    async def elicit(self, context, params):
        self.asked.append(params.message)
        if self.while_asked is not None:
            job, self.while_asked = self.while_asked, None
            await job()
        content = {"username": self.name, "email": f"{self.name}@example.com", "note": f"{self.name} agrees"}
        return mcp.types.ElicitResult(action="accept", content=content)

    async def sample(self, context, params):
        self.sampled.append(params.messages[0].content.text)
        return mcp.types.CreateMessageResult(
            role="assistant", content=mcp.types.TextContent(type="text", text=f"{self.name} says hi"), model="test-model"
        )

    async def log(self, params):
        self.logs.append(params)


def Session(url, person):
    """One client session over HTTP; `person` None declares no client capability."""
    p = person
    options = {} if p is None else {"elicitation_callback": p.elicit, "sampling_callback": p.sample, "logging_callback": p.log}
    return HandshakeSession(url, **options)


def text(result):
    return " ".join(getattr(c, "text", "") for c in result.content)


async def call(session, group, tool, arguments=None, **options):
    return await session.call_tool("call_tool", {"group": group, "tool": tool, "arguments": arguments or {}}, **options)


async def main(url: str) -> int:
    check = Checks()
    alice, bob = Person("alice"), Person("bob")
    async with Session(url, alice) as a, Session(url, bob) as b, Session(url, None) as c:
        await connected(a)

        # One session's call: its own person is asked, and nobody else.
        r = await call(a, "shared", "test_elicitation", {"message": "for alice"})
        check("alice@example.com" in text(r) and not r.is_error, "elicitation answered by the caller", text(r))
        check(alice.asked == ["for alice"] and bob.asked == [], "only the caller was asked", (alice.asked, bob.asked))

        # Two sessions' calls in flight on one shared connection: which one an elicitation is
        # for cannot be told, so the upstream gets an error; nobody is asked in its place.
        async def alice_meanwhile():
            r = await call(a, "shared", "test_elicitation", {"message": "alice, meanwhile"})
            inner.append(r)

        inner = []
        bob.while_asked = alice_meanwhile
        r = await call(b, "shared", "test_elicitation", {"message": "for bob"})
        check("bob@example.com" in text(r), "bob's own call answered", text(r))
        check(len(inner) == 1 and inner[0].is_error and "per_session" in text(inner[0]), "uncertain: an error naming per_session", [text(i) for i in inner])
        check(alice.asked == ["for alice"], "alice was not asked for the uncertain one", alice.asked)

        # With per_session each session has its own connection: the same interleaving reaches
        # each caller.
        inner.clear()
        bob.while_asked = lambda: alice_own(inner)

        async def alice_own(out):
            out.append(await call(a, "own", "test_elicitation", {"message": "alice, own"}))

        r = await call(b, "own", "test_elicitation", {"message": "bob, own"})
        check("bob@example.com" in text(r), "bob's own-connection call", text(r))
        check(len(inner) == 1 and "alice@example.com" in text(inner[0]), "alice's own-connection call", [text(i) for i in inner])
        check(alice.asked[-1] == "alice, own" and bob.asked[-1] == "bob, own", "each asked once more", (alice.asked, bob.asked))

        # An upstream on protocol 2026-07-28 asks in an input_required answer: the gateway puts
        # the question to the caller and repeats the call with the answer.
        r = await call(a, "asker", "confirm", {"what": "deploy"})
        check(text(r) == "deploy: accept alice agrees" and alice.asked[-1] == "May I deploy?", "an upstream's input_required, asked of the caller", text(r))

        # A client that cannot elicit: an error, never a made-up "decline".
        r = await call(c, "own", "test_elicitation", {"message": "for nobody"})
        check(r.is_error and "did not declare" in text(r), "no capability: an error", text(r))
        r = await call(c, "asker", "confirm", {"what": "guess"})
        check(r.is_error and "did not declare" in text(r), "no capability, input_required: an error", text(r))

        # Sampling: refused where the source says sampling = false, relayed elsewhere.
        r = await call(a, "shared", "test_sampling", {"prompt": "hello?"})
        check(r.is_error and "sampling = false" in text(r), "sampling refused by config", text(r))
        r = await call(a, "own", "test_sampling", {"prompt": "hello?"})
        check("alice says hi" in text(r) and alice.sampled == ["hello?"] and bob.sampled == [], "sampling relayed", text(r))

        # Progress through call_tool reaches the request that asked.
        seen = []

        async def progress(value, total, message):
            seen.append((value, total))

        r = await call(a, "own", "test_tool_with_progress", progress_callback=progress)
        check(not r.is_error and [v for v, _ in seen] == [0, 50, 100] and all(t == 100 for _, t in seen), "progress", seen)

        # ... and through a CodeAct program's host call.
        seen.clear()
        program = 'await call_tool(group="own", tool="test_tool_with_progress", arguments={})'
        r = await a.call_tool("run_code", {"code": program}, progress_callback=progress)
        check(not r.is_error and [v for v, _ in seen] == [0, 50, 100], "progress from a program's host call", (text(r), seen))

        # Log messages of a call reach its session, logger prefixed with the source, at the
        # level the session set.
        r = await call(a, "shared", "test_tool_with_logging")
        await asyncio.sleep(0.2)
        loggers = {m.logger for m in alice.logs}
        check(len(alice.logs) == 3 and loggers == {"shared"}, "log messages", [(m.logger, m.data) for m in alice.logs])
        check(bob.logs == [], "another session's logs stay there", bob.logs)
        await a.set_logging_level("warning")
        await call(a, "shared", "test_tool_with_logging")
        await asyncio.sleep(0.2)
        check(len(alice.logs) == 3, "below the session's level: not sent", len(alice.logs))

    # A client on protocol 2026-07-28 (the SDK's `Client`): progress and log messages reach it
    # on its request's stream; an upstream's elicitation or sampling request, which that
    # protocol does not carry during a call, comes back as an `input_required` answer, and the
    # call goes on when the client repeats it with the person's answer.
    carol = Person("carol")
    async with mcp.Client(
        url, elicitation_callback=carol.elicit, sampling_callback=carol.sample, logging_callback=carol.log
    ) as modern:
        check(modern.protocol_version == "2026-07-28", "protocol", modern.protocol_version)
        seen.clear()
        r = await call(modern, "own", "test_tool_with_progress", progress_callback=progress)
        check(not r.is_error and [v for v, _ in seen] == [0, 50, 100], "progress on 2026-07-28", seen)
        await call(modern, "own", "test_tool_with_logging")
        await asyncio.sleep(0.2)
        check(len(carol.logs) == 3 and {m.logger for m in carol.logs} == {"own"}, "logs on 2026-07-28", carol.logs)
        r = await call(modern, "own", "test_elicitation", {"message": "for carol"})
        check(not r.is_error and "carol@example.com" in text(r), "elicitation on 2026-07-28 answered by carol", text(r))
        check(carol.asked == ["for carol"] and "for carol" not in alice.asked + bob.asked, "only carol was asked", carol.asked)
        r = await call(modern, "own", "test_sampling", {"prompt": "carol?"})
        check("carol says hi" in text(r) and carol.sampled == ["carol?"], "sampling on 2026-07-28", text(r))
        r = await call(modern, "asker", "confirm", {"what": "ship"})
        check(text(r) == "ship: accept carol agrees" and carol.asked[-1] == "May I ship?", "input_required both ways", text(r))
        program = 'r = await call_tool(group="own", tool="test_elicitation", arguments={"message": "from a program"})\nr'
        r = await modern.call_tool("run_code", {"code": program})
        check("carol@example.com" in text(r) and carol.asked[-1] == "from a program", "a program's host call asks on 2026-07-28", text(r))

        # By hand: the question, its state honoured for this very call only, once.
        args = {"group": "own", "tool": "test_elicitation", "arguments": {"message": "by hand"}}
        first = await modern.session.call_tool("call_tool", args, allow_input_required=True)
        asked = getattr(first, "input_requests", None) or {}
        check(
            list(asked) == ["upstream-1"] and asked["upstream-1"].method == "elicitation/create",
            "input_required names the upstream's question",
            first,
        )
        state = first.request_state
        decline = {"upstream-1": mcp.types.ElicitResult(action="decline")}
        other = {**args, "arguments": {"message": "something else"}}
        try:
            await modern.session.call_tool("call_tool", other, input_responses=decline, request_state=state)
            check(False, "another call's state is refused", "accepted")
        except mcp.MCPError as e:
            check("another call" in str(e), "another call's state is refused", str(e))
        r = await modern.session.call_tool("call_tool", args, input_responses=decline, request_state=state)
        check(not r.is_error and "action=decline" in text(r), "the person's decline reaches the upstream as given", text(r))
        r = await modern.session.call_tool("call_tool", args, input_responses=decline, request_state=state)
        check(r.is_error and "no longer waiting" in text(r), "a spent state: nothing more ran", text(r))
    print(f"{check.passed} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:])))
