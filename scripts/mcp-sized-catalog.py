#!/usr/bin/env python3
"""A large catalog whose tools are as big as real MCP servers' tools, built from the shared sets.

    python3 scripts/mcp-sized-catalog.py TOOLS OUT.json [--data DIR] [--seed N]

Real MCP servers' tools carry about twice ToolBench's schema text (input schemas of ~490 bytes
on average, median ~310, as compact JSON) and descriptions of ~150 characters. The shared sets'
tools are smaller (ToolBench: 238 / 115 bytes, 101 characters). Each tool written here starts
from a tool of a set with schemas (toolbench-stable, seal-tools, restbench, bfcl-multiturn, in
turn) and takes the description and properties of a second tool drawn at random from the
same sets, so the text stays real API text. Groups are the first tool's group renamed per
replica (`<group>-r<i>`, the group's name cut to fit 32 characters), so names stay unique. The figures the catalog reached are printed.
"""

import argparse
import json
import random
import statistics
from pathlib import Path

SETS = ["toolbench-stable", "seal-tools", "restbench", "bfcl-multiturn"]
# How many other tools' properties a tool takes (0, 1 or 2), as weights: brings the mean and
# the median of the schema sizes to the real servers' (every tool takes the second description).
MERGED = [0.4, 0.35, 0.25]
# The longest group name a catalog allows.
NAME_MAX = 32


def tools_of(data):
    out = []
    for name in SETS:
        catalog = json.loads((Path(data) / name / "catalog.json").read_text())
        for group in catalog["groups"]:
            for tool in group["tools"]:
                out.append((group, tool))
    return out


def merged(tool, other, extra_schemas):
    schema = json.loads(json.dumps(tool.get("inputSchema") or {"type": "object"}))
    props = schema.setdefault("properties", {})
    for n, extra in enumerate(extra_schemas, start=2):
        for key, value in (extra.get("inputSchema") or {}).get("properties", {}).items():
            props.setdefault(key if key not in props else f"{key}_{n}", value)
    description = (tool.get("description") or "").strip()
    extra = (other.get("description") or "").strip()
    if extra:
        description = f"{description} {extra}" if description else extra
    return {"name": tool["name"], "description": description, "inputSchema": schema}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tools", type=int)
    p.add_argument("out")
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / "../shared/data"))
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    rng = random.Random(args.seed)
    pool = tools_of(args.data)
    groups = {}
    names = set()
    replica = 0
    made = 0
    while made < args.tools:
        for group, tool in pool:
            if made == args.tools:
                break
            _, other = pool[rng.randrange(len(pool))]
            key = (group["name"], replica)
            if key not in groups:
                suffix = f"-r{replica}"
                name = group["name"][: NAME_MAX - len(suffix)] + suffix
                while name in names:
                    suffix += "x"
                    name = group["name"][: NAME_MAX - len(suffix)] + suffix
                names.add(name)
                groups[key] = {"name": name, "description": group.get("description", ""), "tools": []}
            g = groups[key]
            k = rng.choices(range(len(MERGED)), weights=MERGED)[0]
            extra = [other] + [pool[rng.randrange(len(pool))][1] for _ in range(k - 1)]
            g["tools"].append(merged(tool, other, extra[:k]))
            made += 1
        replica += 1
    catalog = {"groups": list(groups.values())}
    Path(args.out).write_text(json.dumps(catalog, separators=(",", ":")))
    tools = [t for g in catalog["groups"] for t in g["tools"]]
    schema = [len(json.dumps(t["inputSchema"], separators=(",", ":"))) for t in tools]
    desc = [len(t["description"]) for t in tools]
    print(
        f"{len(tools)} tools in {len(groups)} groups, {Path(args.out).stat().st_size / 1e6:.1f} MB; "
        f"schema bytes mean {statistics.mean(schema):.0f}, median {statistics.median(schema):.0f}; "
        f"description characters mean {statistics.mean(desc):.0f}, median {statistics.median(desc):.0f}"
    )


if __name__ == "__main__":
    main()
