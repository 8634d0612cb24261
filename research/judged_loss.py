#!/usr/bin/env python3
"""How much of a distractor catalog's recall loss is right answers the labels lack (BENCHMARKS.md
"Judged: what the metatool loss is made of").

    toolsearch eval --catalog OWN.json --queries Q --method hybrid --split test --rankings own.jsonl
    toolsearch eval --catalog BIG.json --queries Q --method hybrid --split test --rankings big.jsonl
    python3 research/judged_loss.py sample own.jsonl big.jsonl BIG.json N SEED > pool.jsonl
    python3 research/judged_loss.py score own.jsonl big.jsonl JUDGMENTS.jsonl

`sample` draws N single-label queries whose labelled tool the method ranks in the top ten on
the set's own catalog but not in the big one ("lost"), with Python's `random.Random(SEED)`,
and writes each with its top ten in the big catalog (name and the first 160 characters of the
description), to be judged by reading. A judgment line is `{"id", "answered": bool, "by":
"group/tool" or null, "why"}`: `answered` when a tool of that top ten other than the label does
what the question asks by its name and description (a tool that only shares the topic does not;
unsure counts as not answered).

`score` prints the recall@10 loss as measured, and as estimated with the judgments: the lost
single-label queries a judged tool still answers are taken off, in the share the sample shows
(with a 95 % Wilson interval); multi-label queries' net loss is kept as measured. Judgments
of queries the rankings given no longer lose (another build's) are left out, and said so.
"""

import json
import math
import random
import sys


def rankings(path, method):
    out = {}
    for line in open(path):
        r = json.loads(line)
        if r["method"] == method:
            out[r["id"]] = r
    return out


def hit(relevant):
    return relevant["rank"] is not None and relevant["rank"] <= 10


def compare(own_path, big_path, method="hybrid"):
    own, big = rankings(own_path, method), rankings(big_path, method)
    lost, gained, multi_loss = [], 0, 0.0
    for qid, r in own.items():
        b = big[qid]
        if len(r["relevant"]) == 1:
            a, c = hit(r["relevant"][0]), hit(b["relevant"][0])
            if a and not c:
                lost.append(qid)
            elif c and not a:
                gained += 1
        else:
            found = sum(map(hit, r["relevant"])) - sum(map(hit, b["relevant"]))
            multi_loss += found / len(r["relevant"])
    return own, big, sorted(lost), gained, multi_loss


def sample(own_path, big_path, catalog_path, n, seed):
    _, big, lost, _, _ = compare(own_path, big_path)
    text = {}
    for g in json.load(open(catalog_path))["groups"]:
        for t in g["tools"]:
            text[g["name"] + "/" + t["name"]] = " ".join((t.get("description") or "").split())[:160]
    for qid in random.Random(seed).sample(lost, n):
        r = big[qid]
        label = r["relevant"][0]
        print(json.dumps({
            "id": qid,
            "query": r["query"],
            "label": [label["tool"], label["rank"], text.get(label["tool"], "")],
            "top": [[t, text.get(t, "")] for t in r["top"]],
        }, ensure_ascii=False))


def wilson(k, n, z=1.96):
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


def score(own_path, big_path, judgments_path):
    own, _, lost, gained, multi_loss = compare(own_path, big_path)
    every = [json.loads(l) for l in open(judgments_path) if l.strip()]
    assert len({j["id"] for j in every}) == len(every), "a query judged twice"
    # Judgments made on another build's rankings: only the queries still lost here count.
    lost_set = set(lost)
    judged = [j for j in every if j["id"] in lost_set]
    if len(judged) < len(every):
        print(f"{len(every) - len(judged)} judged queries are not lost in these rankings; left out")
    n = len(own)
    k = sum(1 for j in judged if j["answered"])
    share = k / len(judged)
    lo, hi = wilson(k, len(judged))
    measured = (len(lost) - gained + multi_loss) / n
    def est(s):
        return (len(lost) * (1 - s) - gained + multi_loss) / n
    print(f"queries {n}: single-label lost {len(lost)}, gained {gained}; multi-label net loss {multi_loss:.1f}")
    print(f"recall@10 loss as measured: {100 * measured:.1f} points")
    print(f"judged: {k} of {len(judged)} lost queries still answered by another tool "
          f"({100 * share:.0f} %, 95 % interval {100 * lo:.0f}-{100 * hi:.0f} %)")
    print(f"loss with the judgments: {100 * est(share):.1f} points "
          f"(interval {100 * est(hi):.1f}-{100 * est(lo):.1f})")


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "sample" and len(sys.argv) == 7:
        sample(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    elif cmd == "score" and len(sys.argv) == 5:
        score(*sys.argv[2:5])
    else:
        sys.exit(__doc__)
