#!/usr/bin/env python3
"""Semantic-side ideas tried outside the engine against distractor catalogs (BENCHMARKS.md
"Semantic-side ideas, measured outside the engine").

    cargo run --release -p toolsearch-embed --example dump_vectors CATALOG QUERIES DUMP
    python3 research/semantic_lab.py check DUMP...
    python3 research/semantic_lab.py density DUMP...
    python3 research/semantic_lab.py wordllama WEIGHTS TOKENIZER DUMP...
    python3 research/semantic_lab.py refit WEIGHTS TOKENIZER MIX OWN_A OWN_B DUMP...
    python3 research/semantic_lab.py vectors NAME DUMP...
    python3 research/semantic_lab.py ranks OWN BIG

Every figure is recall@10 on the test half, computed the way the engine computes it: semantic
is each tool's best cosine with any of the query's vectors (floor 0.2, `min_similarity`);
hybrid is `search/hybrid.rs`'s adaptive fusion with the default `[search.hybrid]` (semantic
weight 0.60, confidence scale 2 rare-word IDFs, slope 7) over semantic's and BM25's first 100.
`check` prints the two as they are, to compare with `toolsearch eval` on the same catalog
(hybrid agrees to the fourth decimal on the four catalogs of BENCHMARKS.md, semantic within
0.0003: the engine quantises the query to bytes).

`density` discounts each tool's cosine by alpha times its mean cosine with its k nearest tools
(a CSLS-style correction of hubness: a tool that resembles many others says less by its
similarity to a query), counting either all other tools or only those of other groups.

`wordllama` mixes in a second, static encoder: WordLlama's `l2_supercat_256` token embeddings
(in the PyPI wheel `wordllama`, `weights/l2_supercat_256.safetensors` and
`tokenizers/l2_supercat_tokenizer_config.json`), averaged over a text's tokens and normalised;
a tool's score is `(1 - mix) * cos_minilm + mix * cos_wordllama`, which is the cosine of the two
unit vectors concatenated with weights `sqrt(1 - mix)` and `sqrt(mix)`. A query's sentence
vectors get the whole query's WordLlama part.

`refit` chooses the fusion's three settings again for the mixed encoders at MIX, as
`tune_hybrid` chose them (the grid w 0.5/0.6/0.67/0.75 x scale 1/2/2.8 x slope 5/7/9, by the mean
hybrid recall@10 of every third train-half query of the two own catalogs OWN_A and OWN_B), and
prints the test halves of every dump with the refitted and the default settings.

`vectors` mixes in vectors another encoder wrote beside the dump, the same way:
`DUMP/NAME_tools.f32` and `DUMP/NAME_queries.f32` (one row per tool and per test-half question,
little-endian f32; `research/use_embed.mjs` writes them for the Universal Sentence Encoder).

`ranks` takes the single-label test questions whose tool semantic search ranks in the first ten
of the own catalog's dump OWN, and counts where it ranks that tool in BIG (the same queries
among more tools): how far below the tenth place the lost ones fall.

Needs numpy, and for `wordllama` also `tokenizers` and `safetensors` (PyPI).
"""

import json
import sys

import numpy as np

FLOOR = 0.2


def load(d, split="test"):
    meta = json.load(open(f"{d}/meta.json"))
    dim = meta["dim"]
    tools = np.fromfile(f"{d}/tools.f32", dtype="<f4").reshape(-1, dim)
    keys = open(f"{d}/tools.txt").read().split("\n")[: len(tools)]
    rows = np.fromfile(f"{d}/queries.f32", dtype="<f4").reshape(-1, dim)
    queries, off = [], 0
    for line in open(f"{d}/queries.jsonl"):
        q = json.loads(line)
        if q["split"] == split:
            q["vec"] = rows[off : off + q["nvec"]]
            queries.append(q)
        off += q["nvec"]
    return tools, keys, queries, meta


def cosines(tools, q):
    return (tools @ q["vec"].T).max(axis=1)


def adaptive_weight(best, w=0.60, scale=2.0, slope=7.0):
    confidence = max(best, 0.0) / (max(best, 0.0) + scale)
    logit = np.log(w / (1 - w)) - slope * (confidence - 0.5)
    return 1 / (1 + np.exp(-logit))


def found(keys, ids, relevant):
    return len({keys[t] for t in ids} & set(relevant)) / len(relevant)


def semantic(tools, keys, queries, discount=None):
    total = 0.0
    for q in queries:
        raw = cosines(tools, q)
        s = raw if discount is None else raw - discount
        s = np.where(raw >= FLOOR, s, -np.inf)
        top = [t for t in np.argsort(-s, kind="stable")[:10] if s[t] > -np.inf]
        total += found(keys, top, q["relevant"])
    return total / len(queries)


def hybrid(tools, keys, queries, rare_idf, discount=None, params=(0.60, 2.0, 7.0)):
    total = 0.0
    for q in queries:
        raw = cosines(tools, q)
        s = raw if discount is None else raw - discount
        top = np.argpartition(-s, 100)[:100]
        bm25 = q["bm25"]
        best = max((b for _, b in bm25), default=0.0)
        w = adaptive_weight(best / rare_idf, *params)
        fused = {}
        if best > 0:
            for t, b in bm25:
                fused[t] = fused.get(t, 0.0) + (1 - w) * b / best
        hi, lo = s[top].max(), s[top].min()
        for t in top:
            if raw[t] < FLOOR and t not in fused:
                continue
            scaled = (s[t] - lo) / (hi - lo) if hi > lo else 1.0
            fused[t] = fused.get(t, 0.0) + w * scaled
        ranked = sorted(fused.items(), key=lambda x: (-x[1], x[0]))[:10]
        total += found(keys, [t for t, _ in ranked], q["relevant"])
    return total / len(queries)


def density(tools, keys, k, other_groups):
    groups = np.array([key.split("/")[0] for key in keys])
    out = np.zeros(len(tools), dtype=np.float32)
    if other_groups and len(set(groups)) == 1:
        return out
    for a in range(0, len(tools), 1000):
        s = tools[a : a + 1000] @ tools.T
        if other_groups:
            s[groups[a : a + 1000, None] == groups[None, :]] = -9
        else:
            s[np.arange(len(s)), a + np.arange(len(s))] = -9
        out[a : a + 1000] = -np.partition(-s, k, axis=1)[:, :k].mean(axis=1)
    return out


def show(d, what, tools, keys, queries, meta, discount=None):
    print(
        f"{d}\t{what}\tsemantic {semantic(tools, keys, queries, discount):.4f}"
        f"\thybrid {hybrid(tools, keys, queries, meta['rare_idf'], discount):.4f}",
        flush=True,
    )


def mixed(embed, d, mix, split):
    tools, keys, queries, meta = load(d, split)
    a, b = np.sqrt(1 - mix), np.sqrt(mix)
    texts = [json.loads(line) for line in open(f"{d}/texts.jsonl")]
    both = np.hstack([a * tools, b * embed(texts)])
    out = []
    for q, v in zip(queries, embed([q["query"] for q in queries])):
        vec = np.hstack([a * q["vec"], b * np.tile(v, (len(q["vec"]), 1))])
        out.append(dict(q, vec=vec))
    return both, keys, out, meta


def beside(d, name, mix):
    tools, keys, queries, meta = load(d)

    def rows(file, n):
        v = np.fromfile(f"{d}/{name}_{file}.f32", dtype="<f4").reshape(n, -1)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    a, b = np.sqrt(1 - mix), np.sqrt(mix)
    both = np.hstack([a * tools, b * rows("tools", len(tools))])
    out = []
    for q, v in zip(queries, rows("queries", len(queries))):
        out.append(dict(q, vec=np.hstack([a * q["vec"], b * np.tile(v, (len(q["vec"]), 1))])))
    return both, keys, out, meta


def refit(embed, mix, own, dumps):
    grid = [
        (w, scale, slope)
        for w in (0.5, 0.6, 0.67, 0.75)
        for scale in (1.0, 2.0, 2.8)
        for slope in (5.0, 7.0, 9.0)
    ]
    train = [mixed(embed, d, mix, "train") for d in own]
    for t in train:
        t[2][:] = t[2][::3]

    def fit(p):
        return np.mean([hybrid(t, k, q, m["rare_idf"], params=p) for t, k, q, m in train])

    best = max(grid, key=fit)
    print(f"mix={mix}: best on the train halves {best}", flush=True)
    for d in dict.fromkeys(dumps):
        tools, keys, queries, meta = mixed(embed, d, mix, "test")
        for p in (best, (0.60, 2.0, 7.0)):
            r = hybrid(tools, keys, queries, meta["rare_idf"], params=p)
            print(f"{d}\tmix={mix} fusion {p}\thybrid {r:.4f}", flush=True)


def ranks(own, big):
    small, keys_small, queries_small, _ = load(own)
    tools, keys, queries, _ = load(big)
    at_small = {k: i for i, k in enumerate(keys_small)}
    at = {k: i for i, k in enumerate(keys)}
    out = []
    for qs, q in zip(queries_small, queries):
        if len(q["relevant"]) != 1 or q["relevant"][0] not in at:
            continue
        s = cosines(small, qs)
        if (s > s[at_small[q["relevant"][0]]]).sum() >= 10:
            continue
        s = cosines(tools, q)
        out.append((s > s[at[q["relevant"][0]]]).sum() + 1)
    out = np.array(out)
    print(f"{len(out)} single-label questions in the first ten of {own}; their rank in {big}:")
    for lo, hi in [(1, 10), (11, 20), (21, 50), (51, 100), (101, 1000), (1001, len(tools))]:
        print(f"  {lo}-{hi}\t{((out >= lo) & (out <= hi)).sum()}")


def main(argv):
    cmd, rest = argv[1], argv[2:]
    if cmd in ("wordllama", "refit"):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        table = load_file(rest[0])["embedding.weight"].astype(np.float32)
        tokenizer = Tokenizer.from_file(rest[1])
        rest = rest[2:]

        def embed(texts):
            out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
            for i, enc in enumerate(tokenizer.encode_batch(texts, add_special_tokens=False)):
                ids = np.clip(np.array(enc.ids, dtype=np.int64), 0, len(table) - 1)
                if len(ids):
                    v = table[ids].mean(axis=0)
                    out[i] = v / (np.linalg.norm(v) or 1.0)
            return out

    if cmd == "vectors":
        name, rest = rest[0], rest[1:]
    if cmd == "ranks":
        ranks(*rest)
        return
    if cmd == "refit":
        refit(embed, float(rest[0]), rest[1:3], rest[1:])
        return
    for d in rest:
        tools, keys, queries, meta = load(d)
        if cmd == "check":
            show(d, "as is", tools, keys, queries, meta)
        elif cmd == "density":
            show(d, "as is", tools, keys, queries, meta)
            for other in (False, True):
                for k in (10,):
                    dens = density(tools, keys, k, other)
                    for alpha in (0.25, 0.5, 0.75):
                        what = f"{'other groups' if other else 'all tools'} k={k} alpha={alpha}"
                        show(d, what, tools, keys, queries, meta, alpha * dens)
        elif cmd == "wordllama":
            for mix in (0.0, 0.25, 0.35, 0.5):
                show(d, f"mix={mix}", *mixed(embed, d, mix, "test"))
        elif cmd == "vectors":
            for mix in (0.0, 0.25, 0.5, 1.0):
                show(d, f"{name} mix={mix}", *beside(d, name, mix))
        else:
            sys.exit(f"unknown command {cmd!r}: check, density, wordllama, refit, vectors or ranks")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv)
