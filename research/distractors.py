#!/usr/bin/env python3
"""Builds the 10k-tool distractor catalogs of BENCHMARKS.md.

    python3 research/distractors.py ../shared/data OUT_DIR [TOOLS]

writes OUT_DIR/metatool-10k.json, OUT_DIR/toolbench-10k.json and
OUT_DIR/toolbench-10k-untouched.json (TOOLS tools each, default 10,000; with TOOLS 0,
OUT_DIR/metatool-mixed.json and toolbench-mixed.json: the two sets mixed, nothing replicated,
2,678 tools each). Each shared set keeps its own tools, groups and queries (the queries files
are used unchanged); what is added around them are tools of other groups, none of them
relevant to any of the set's queries:

- metatool-10k: metatool's 199 tools, ToolBench's 2,479 (811 other groups), then ToolBench
  replicated under renamed groups (`<group>-r1`, `-r2`, ...) up to TOOLS (mixed, then
  replicated).
- toolbench-10k: ToolBench's 2,479 tools, metatool's 199 (group `plugins`), then the 1,258
  ToolBench tools that no query lists as relevant, replicated under renamed groups up to TOOLS
  (a replica of a relevant tool would be a second right answer, not a distractor).
- toolbench-10k-untouched: the same, but only the tools of the 187 ToolBench groups that no
  query touches (270 tools) are replicated, so no replica is a sibling of a relevant tool
  (the same API under another group name).
"""

import json
import sys
from pathlib import Path


def load(data: Path, name: str):
    catalog = json.loads((data / name / "catalog.json").read_text())
    relevant = set()
    with open(data / name / "queries.jsonl") as f:
        for line in f:
            if line.strip():
                relevant.update(json.loads(line)["relevant"])
    return catalog["groups"], relevant


def fill(groups, extra, size):
    """Appends replicas of `extra` ((group, [tools])) under renamed groups until `size` tools
    (a name cut to fit the 32-character limit with its `-r<n>` suffix, as `benches/toolbench.rs`)."""
    count = sum(len(g["tools"]) for g in groups)
    names = {g["name"] for g in groups}
    copy = 1
    while count < size:
        for i, (g, tools) in enumerate(extra):
            if count >= size:
                break
            tools = tools[: size - count]
            suffix = f"-r{copy}"
            name = g["name"][: 32 - len(suffix)] + suffix
            if name in names:
                name = f"g{i}{suffix}"
            names.add(name)
            groups.append(
                {
                    "name": name,
                    "description": g.get("description", ""),
                    "tools": tools,
                }
            )
            count += len(tools)
        copy += 1
    return groups


def main():
    data, out = Path(sys.argv[1]), Path(sys.argv[2])
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
    tag = "mixed" if size == 0 else "10k" if size == 10_000 else str(size)
    out.mkdir(parents=True, exist_ok=True)
    meta, _ = load(data, "metatool")
    bench, bench_relevant = load(data, "toolbench-stable")

    mixed = [dict(g) for g in meta] + [dict(g) for g in bench]
    every = [(g, g["tools"]) for g in bench]
    mixed = fill(mixed, every, size)
    (out / f"metatool-{tag}.json").write_text(json.dumps({"groups": mixed}))

    mixed = [dict(g) for g in bench] + [dict(g) for g in meta]
    spare = []
    for g in bench:
        tools = [t for t in g["tools"] if f"{g['name']}/{t['name']}" not in bench_relevant]
        if tools:
            spare.append((g, tools))
    mixed = fill(mixed, spare, size)
    (out / f"toolbench-{tag}.json").write_text(json.dumps({"groups": mixed}))
    names = [f"metatool-{tag}.json", f"toolbench-{tag}.json"]
    if size > 0:
        # Only ToolBench's groups that no query touches are replicated: no replica is a
        # sibling of a relevant tool (an API a question names, under another group name).
        touched = {r.split("/")[0] for r in bench_relevant}
        mixed = [dict(g) for g in bench] + [dict(g) for g in meta]
        untouched = [(g, g["tools"]) for g in bench if g["name"] not in touched]
        mixed = fill(mixed, untouched, size)
        (out / f"toolbench-{tag}-untouched.json").write_text(json.dumps({"groups": mixed}))
        names.append(f"toolbench-{tag}-untouched.json")
    for name in names:
        groups = json.loads((out / name).read_text())["groups"]
        print(name, sum(len(g["tools"]) for g in groups), "tools in", len(groups), "groups")


if __name__ == "__main__":
    main()
