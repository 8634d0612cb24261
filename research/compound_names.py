#!/usr/bin/env python3
"""Derived evaluation sets in the shape of terse RapidAPI-style catalogs.

For each shared set, writes OUT/terse/<set> and OUT/compound/<set>, each with catalog.json and
queries.jsonl:
- terse: every tool description cut to its first sentence (at most 15 words), every group
  description replaced by "<group> tools", parameter descriptions removed;
- compound: terse, and every tool named `/v1/<its name lower-cased without separators>`
  (`Get Email` -> `/v1/getemail`), the queries' relevant ids renamed to match.

    python3 research/compound_names.py ../shared/data /tmp/derived
    PEER_DATA=/tmp/derived/compound cargo bench -p toolsearch-peers --bench ratel
"""
import json
import os
import re
import sys


def strip_descriptions(node):
    if isinstance(node, dict):
        node.pop("description", None)
        for v in node.values():
            strip_descriptions(v)
    elif isinstance(node, list):
        for v in node:
            strip_descriptions(v)


def terse(catalog):
    for g in catalog["groups"]:
        g["description"] = f"{g['name']} tools"
        for t in g["tools"]:
            d = " ".join((t.get("description") or "").split())
            first = re.split(r"(?<=[.!?])\s", d, maxsplit=1)[0]
            t["description"] = " ".join(first.split()[:15])
            if t.get("inputSchema"):
                strip_descriptions(t["inputSchema"])


def compound(catalog):
    renamed = {}
    for g in catalog["groups"]:
        used = set()
        for t in g["tools"]:
            base = "/v1/" + re.sub(r"[^0-9a-z]", "", t["name"].lower())
            name, k = base, 2
            while name in used:
                name, k = f"{base}{k}", k + 1
            used.add(name)
            renamed[f"{g['name']}/{t['name']}"] = f"{g['name']}/{name}"
            t["name"] = name
    return renamed


def write(out, catalog, queries, renamed):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "catalog.json"), "w") as f:
        json.dump(catalog, f)
    with open(os.path.join(out, "queries.jsonl"), "w") as f:
        for q in queries:
            q = dict(q, relevant=[renamed.get(r, r) for r in q["relevant"]])
            f.write(json.dumps(q) + "\n")


def main():
    data, out = sys.argv[1], sys.argv[2]
    for name in ["metatool", "toolbench-stable"]:
        with open(os.path.join(data, name, "catalog.json")) as f:
            catalog = json.load(f)
        with open(os.path.join(data, name, "queries.jsonl")) as f:
            queries = [json.loads(line) for line in f if line.strip()]
        terse(catalog)
        write(os.path.join(out, "terse", name), catalog, queries, {})
        renamed = compound(catalog)
        write(os.path.join(out, "compound", name), catalog, queries, renamed)


if __name__ == "__main__":
    main()
