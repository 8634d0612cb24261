"""Checks toolsearch's vendor-format JSON against the vendors' own published types.

Usage: vendor_shapes.py DIR. DIR holds what the gateway printed or served:
  anthropic_export.json   the tools array of `toolsearch export --format anthropic`
  anthropic_search.json   a `tool_search` answer: the content of a tool_result
  anthropic_call.json     a deferred tool's answer: the content of a tool_result
  openai_export.json      the tools array of `toolsearch export --format openai`
  openai_search.json      a tool_search_output item
  openai_call.json        a function_call_output item
and any number of further anthropic_search*.json / openai_search*.json files.

Each value is checked against the SDK's typed request params (the TypedDicts of the
`anthropic` and `openai` packages from PyPI, walked member by member), strictly: a member the
type does not know, a missing required member or a wrong type fails. Then the values are sent through each SDK's
real client (`messages.create`, `responses.create`) over an in-process transport that records
the request, and the body on the wire must carry them unchanged. Prints one line per check.
"""

import json
import pathlib
import sys
import types
import typing
from collections.abc import Iterable, Mapping, Sequence

import typing_extensions

import httpx2 as httpx
import anthropic
import openai
from anthropic.types import (
    ImageBlockParam,
    TextBlockParam,
    ToolParam,
    ToolReferenceBlockParam,
    ToolResultBlockParam,
)
from openai.types.responses import (
    FunctionToolParam,
    NamespaceToolParam,
    ToolSearchToolParam,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput
from openai.types.responses.response_tool_search_output_item_param_param import (
    ResponseToolSearchOutputItemParamParam,
)

CHECKS = 0


def mismatch(tp, value, path):
    """Why `value` is not a `tp` of the SDK's typed params, or None. Strict: a TypedDict
    member the type does not know (unless the type allows extras), a missing required member,
    or a wrong type is a mismatch."""
    if tp is object or tp is typing.Any:
        return None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return mismatch(args[0], value, path)
    if origin is typing.Union or origin is types.UnionType:
        reasons = [mismatch(a, value, path) for a in args]
        return None if None in reasons else " / ".join(r for r in reasons if r)
    if origin is typing.Literal:
        return None if value in args else f"{path}: {value!r} is not one of {args}"
    if tp is type(None):
        return None if value is None else f"{path}: expected null"
    if typing_extensions.is_typeddict(tp):
        if not isinstance(value, dict):
            return f"{path}: expected an object ({tp.__name__})"
        hints = typing_extensions.get_type_hints(tp, include_extras=True)
        extra = (getattr(tp, "__pydantic_config__", None) or {}).get("extra") == "allow"
        required = set(tp.__required_keys__) | {
            k for k, h in hints.items() if typing.get_origin(h) is typing_extensions.Required
        }
        for key in sorted(required):
            if key not in value:
                return f"{path}: {tp.__name__} requires {key!r}"
        for key, v in value.items():
            if key not in hints:
                if extra:
                    continue
                return f"{path}: {tp.__name__} has no member {key!r}"
            hint = hints[key]
            # Required[...] and NotRequired[...] wrap the member's type.
            while typing.get_origin(hint) in (typing_extensions.Required, typing_extensions.NotRequired):
                hint = typing.get_args(hint)[0]
            why = mismatch(hint, v, f"{path}.{key}")
            if why:
                return why
        return None
    if origin in (dict, Mapping) or tp is dict:
        if not isinstance(value, dict):
            return f"{path}: expected an object"
        if args:
            for k, v in value.items():
                why = mismatch(args[1], v, f"{path}.{k}")
                if why:
                    return why
        return None
    if origin in (list, tuple, Iterable, Sequence) or getattr(origin, "__name__", "") == "SequenceNotStr":
        if not isinstance(value, list):
            return f"{path}: expected an array"
        for i, v in enumerate(value):
            why = mismatch(args[0] if args else object, v, f"{path}[{i}]")
            if why:
                return why
        return None
    if tp is bool:
        return None if isinstance(value, bool) else f"{path}: expected a boolean"
    if tp is int:
        return None if isinstance(value, int) and not isinstance(value, bool) else f"{path}: expected an integer"
    if tp is float:
        return None if isinstance(value, (int, float)) and not isinstance(value, bool) else f"{path}: expected a number"
    if tp is str:
        return None if isinstance(value, str) else f"{path}: expected a string"
    return f"{path}: unhandled type {tp!r}"


def strict(kind, value, what):
    """Checks `value` against the SDK's TypedDict `kind`, strictly."""
    global CHECKS
    why = mismatch(kind, value, what)
    if why:
        sys.exit(f"not a valid {kind.__name__}: {why}\n ours: {json.dumps(value)[:1500]}")
    CHECKS += 1


def anthropic_tool(tool, what):
    strict(ToolParam, tool, what)
    if not (1 <= len(tool["name"]) <= 64) or not all(c.isascii() and (c.isalnum() or c in "_-") for c in tool["name"]):
        sys.exit(f"{what}: name {tool['name']!r} breaks the vendor's name rule")


def content_block(block, what):
    kinds = {"tool_reference": ToolReferenceBlockParam, "text": TextBlockParam, "image": ImageBlockParam}
    if block.get("type") not in kinds:
        sys.exit(f"{what}: block type {block.get('type')!r} is not tool_result content")
    strict(kinds[block["type"]], block, what)


def openai_tool(tool, what):
    kinds = {"function": FunctionToolParam, "namespace": NamespaceToolParam, "tool_search": ToolSearchToolParam}
    if tool.get("type") not in kinds:
        sys.exit(f"{what}: tool type {tool.get('type')!r}")
    strict(kinds[tool["type"]], tool, what)
    names = [tool.get("name", "")] + [f["name"] for f in tool.get("tools", [])]
    for name in filter(None, names):
        if not (1 <= len(name) <= 64) or not all(c.isascii() and (c.isalnum() or c in "_-") for c in name):
            sys.exit(f"{what}: name {name!r} breaks the vendor's name rule")


class Recorder:
    """An httpx transport that records each request body and answers with `reply`."""

    def __init__(self, reply):
        self.reply = reply
        self.bodies = []

    def __call__(self, request):
        self.bodies.append(json.loads(request.content))
        return httpx.Response(200, json=self.reply)


def through_anthropic(tools, results):
    """Sends the tools and a conversation holding each tool_result through the SDK."""
    global CHECKS
    rec = Recorder({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
    })
    client = anthropic.Anthropic(api_key="test", base_url="http://sdk.test",
                                 http_client=httpx.Client(transport=httpx.MockTransport(rec)))
    messages = [{"role": "user", "content": "help"}]
    for i, content in enumerate(results):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "tool_search", "input": {"query": "x"}}]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": content}
        strict(ToolResultBlockParam, result, "anthropic tool_result")
        messages.append({"role": "user", "content": [result]})
    message = client.messages.create(model="claude-test", max_tokens=64, tools=tools, messages=messages)
    body = rec.bodies[-1]
    if body["tools"] != tools or body["messages"] != messages:
        sys.exit("anthropic: the SDK changed the tools or the tool results on the wire")
    if message.content[0].text != "done":
        sys.exit("anthropic: the scripted reply did not parse")
    CHECKS += 1


def through_openai(tools, items):
    """Sends the tools and the output items through the Responses API client."""
    global CHECKS
    rec = Recorder({
        "id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-test",
        "status": "completed", "output": [], "parallel_tool_calls": True, "tool_choice": "auto",
        "tools": [], "temperature": 1.0, "top_p": 1.0, "error": None, "incomplete_details": None,
        "instructions": None, "metadata": {},
    })
    client = openai.OpenAI(api_key="test", base_url="http://sdk.test/v1",
                           http_client=httpx.Client(transport=httpx.MockTransport(rec)))
    client.responses.create(model="gpt-test", tools=tools, input=items)
    body = rec.bodies[-1]
    if body["tools"] != tools or body["input"] != items:
        sys.exit("openai: the SDK changed the tools or the items on the wire")
    CHECKS += 1


def main():
    d = pathlib.Path(sys.argv[1])
    load = lambda name: json.loads((d / name).read_text())

    a_tools = load("anthropic_export.json")
    if a_tools[0]["name"] != "tool_search" or "defer_loading" in a_tools[0]:
        sys.exit("anthropic: the search tool must come first, loaded")
    for t in a_tools:
        anthropic_tool(t, f"anthropic export {t['name']}")
    if not any(t.get("defer_loading") for t in a_tools):
        sys.exit("anthropic: nothing is deferred")
    names = {t["name"] for t in a_tools}
    a_results = []
    for f in sorted(d.glob("anthropic_search*.json")) + [d / "anthropic_call.json"]:
        content = json.loads(f.read_text())
        for block in content:
            content_block(block, f.name)
            if block["type"] == "tool_reference" and block["tool_name"] not in names:
                sys.exit(f"{f.name}: {block['tool_name']} is not an exported tool")
        a_results.append(content)
    through_anthropic(a_tools, a_results)

    o_tools = load("openai_export.json")
    if o_tools[0] != {**o_tools[0], "type": "tool_search", "execution": "client"}:
        sys.exit("openai: the first tool must be the client-executed tool_search")
    for t in o_tools:
        openai_tool(t, f"openai export {t.get('name', t['type'])}")
    exported = {f["name"] for t in o_tools for f in t.get("tools", [])}
    items = [{"type": "tool_search_call", "call_id": "call_1", "execution": "client",
              "arguments": {"query": "x"}, "status": "completed"}]
    for f in sorted(d.glob("openai_search*.json")):
        item = json.loads(f.read_text())
        strict(ResponseToolSearchOutputItemParamParam, item, f.name)
        if item.get("execution") != "client":
            sys.exit(f"{f.name}: execution must be client")
        for ns in item["tools"]:
            openai_tool(ns, f.name)
            for fn in ns["tools"]:
                if fn["name"] not in exported:
                    sys.exit(f"{f.name}: {fn['name']} is not an exported tool")
        items.append(item)
    call = load("openai_call.json")
    strict(FunctionCallOutput, call, "openai_call.json")
    items.insert(len(items), {"type": "function_call", "call_id": call["call_id"], "name": "x", "arguments": "{}"})
    items.append(call)
    through_openai(o_tools, items)
    print(f"ok: {CHECKS} checks")


if __name__ == "__main__":
    main()
