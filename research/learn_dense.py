#!/usr/bin/env python3
"""How a tool's learned queries could score under semantic search, measured outside the
engine on the dumps of `dump_vectors` (BENCHMARKS.md, "Learning from use").

    cargo run --release -p toolsearch-embed --example dump_vectors CATALOG QUERIES DUMP
    python3 research/learn_dense.py DUMP...

The uses are replayed from each set's train questions as `learn_replay.py` replays them (same
draws, same seed): full, 30% pointed at a wrong tool, 10% of the questions. A tool keeps its
newest 64 distinct learned queries. Each variant ranks the test questions by a tool score
made of its own cosine `c` (the best of the query's vectors, as the engine has it) and what
its learned queries say, `n`: the cosine of the query with the nearest of them, or `m`: with
their centroid. nDCG@10, no floor.

Needs numpy.
"""

import json
import math
import random
import sys

import numpy as np


def load(d):
    meta = json.load(open(f"{d}/meta.json"))
    dim = meta["dim"]
    tools = np.fromfile(f"{d}/tools.f32", dtype="<f4").reshape(-1, dim)
    tools = tools / np.maximum(np.linalg.norm(tools, axis=1, keepdims=True), 1e-9)
    keys = open(f"{d}/tools.txt").read().split("\n")[: len(tools)]
    rows = np.fromfile(f"{d}/queries.f32", dtype="<f4").reshape(-1, dim)
    queries, off = [], 0
    for line in open(f"{d}/queries.jsonl"):
        q = json.loads(line)
        q["vec"] = rows[off : off + q["nvec"]]
        queries.append(q)
        off += q["nvec"]
    return tools, keys, queries


def replay(queries, keys, wrong, share, seed=1):
    """Per tool id, its learned queries (indexes into `queries`), newest 64 distinct."""
    rng = random.Random(seed)
    names = sorted(keys)
    index = {k: i for i, k in enumerate(keys)}
    learned = {}
    for qi, q in enumerate(queries):
        if q["split"] != "train" or rng.random() >= share:
            continue
        for tool in q["relevant"]:
            if rng.random() < wrong:
                tool = rng.choice([n for n in names if n != tool])
            if tool not in index:
                continue
            lst = learned.setdefault(index[tool], [])
            if qi in lst:
                lst.remove(qi)
            lst.append(qi)
            del lst[:-64]
    return learned


def ndcg10(ranked, relevant):
    dcg = sum(1 / math.log2(i + 2) for i, t in enumerate(ranked[:10]) if t in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(relevant))))
    return dcg / ideal if ideal else 0.0


VARIANTS = {
    "none": lambda c, n, m: c,
    "max(c, n)": lambda c, n, m: np.maximum(c, n),
    "max(c, 0.9n)": lambda c, n, m: np.maximum(c, 0.9 * n),
    "max(c, 0.8n)": lambda c, n, m: np.maximum(c, 0.8 * n),
    "c + 0.5n": lambda c, n, m: c + 0.5 * n,
    "c + n": lambda c, n, m: c + n,
    "c + max(0, n - c)": lambda c, n, m: c + np.maximum(0, n - c),
    "c + 0.5 max(0, n - c)": lambda c, n, m: c + 0.5 * np.maximum(0, n - c),
    "c + 0.25 max(0, n - c)": lambda c, n, m: c + 0.25 * np.maximum(0, n - c),
    "max(c, m)": lambda c, n, m: np.maximum(c, m),
    "c + 0.75 max(0, m - c)": lambda c, n, m: c + 0.75 * np.maximum(0, m - c),
    "c + 0.5 max(0, m - c)": lambda c, n, m: c + 0.5 * np.maximum(0, m - c),
    "c + 0.25 max(0, m - c)": lambda c, n, m: c + 0.25 * np.maximum(0, m - c),
    "c + .25(n-c)+ + .25(m-c)+": lambda c, n, m: c + 0.25 * np.maximum(0, n - c) + 0.25 * np.maximum(0, m - c),
    "c + 0.5m": lambda c, n, m: c + 0.5 * m,
}


def run(d):
    tools, keys, queries = load(d)
    test = [q for q in queries if q["split"] == "test"]
    whole = np.stack([q["vec"][0] for q in queries])
    whole = whole / np.maximum(np.linalg.norm(whole, axis=1, keepdims=True), 1e-9)
    out = {}
    for label, wrong, share in (("full", 0.0, 1.0), ("30% wrong", 0.3, 1.0), ("10%", 0.0, 0.1)):
        learned = replay(queries, keys, wrong, share)
        owners = [(t, qi) for t, qs in learned.items() for qi in qs]
        lq_tool = np.array([t for t, _ in owners], dtype=np.int64)
        lq_vec = whole[[qi for _, qi in owners]] if owners else np.zeros((0, tools.shape[1]))
        centroids = np.zeros_like(tools)
        for t, qs in learned.items():
            v = whole[qs].mean(axis=0)
            centroids[t] = v / max(np.linalg.norm(v), 1e-9)
        scores = {v: [] for v in VARIANTS}
        for q in test:
            c = (tools @ q["vec"].T).max(axis=1)
            n = np.full(len(tools), -1.0, dtype=np.float32)
            if len(owners):
                sims = (lq_vec @ q["vec"].T).max(axis=1)
                np.maximum.at(n, lq_tool, sims)
            has = np.zeros(len(tools), dtype=bool)
            has[list(learned)] = True
            m = np.where(has, (centroids @ q["vec"].T).max(axis=1), -1.0)
            relevant = set(q["relevant"])
            for v, f in VARIANTS.items():
                s = f(c, np.where(has, n, 0.0) if "+" in v else n, np.where(has, m, 0.0) if "+" in v else m)
                top = np.argsort(-s, kind="stable")[:10]
                scores[v].append(ndcg10([keys[t] for t in top], relevant))
        out[label] = {v: float(np.mean(s)) for v, s in scores.items()}
    return out


def main(dumps):
    results = {d.rstrip("/").split("/")[-1]: run(d) for d in dumps}
    for label in ("full", "30% wrong", "10%"):
        print(f"\n{label}: nDCG@10 gain over none (points), per set, and the worst")
        names = list(results)
        print("variant".ljust(24) + "".join(n[:10].rjust(11) for n in names) + "      worst")
        for v in VARIANTS:
            gains = [100 * (results[n][label][v] - results[n][label]["none"]) for n in names]
            base = "" if v != "none" else "  (base " + " ".join(f"{results[n][label]['none']:.3f}" for n in names) + ")"
            print(v.ljust(24) + "".join(f"{g:+11.1f}" for g in gains) + f"{min(gains):+11.1f}" + base)


if __name__ == "__main__":
    main(sys.argv[1:])
