#!/usr/bin/env python3
"""Retrieval quality on every shared set, and the choice of BM25 defaults by the worst set.

    python3 scripts/sets.py table  [--methods keyword,bm25,semantic,hybrid] [--split test]
                                   [--config FILE] [--data DIR] [--bin PATH]
    python3 scripts/sets.py choose [--split train] [--data DIR] [--bin PATH]
    python3 scripts/sets.py compare --methods M --config BASELINE.toml CANDIDATE.toml...
                                    [--split train] [--sample N]

`table` runs `toolsearch eval` on each set of `--data` (default `../shared/data`) and prints
one markdown table: a row per set and method, nDCG@10 and recall@10. The dense methods need
`$TOOLSEARCH_MODEL` (or `--config` naming a model).

`choose` fits the `[search.bm25]` parameters by the rule of BENCHMARKS.md ("BM25 defaults,
chosen by the worst set"): start from textbook BM25 (k1 1.2, b 0.75, every weight 1); try each
parameter's candidate values, one parameter at a time, keeping the others where they are. A
value is admissible when, against the parameters chosen so far, it raises nDCG@10 on a
majority of the sets and lowers it by less than one point on every other, and when its gains
over textbook pass the same test; of the admissible values the one with the best worst-set
gain over textbook is kept when it beats the current worst-set gain by at least a tenth of a
point (less is noise). Rounds repeat until nothing changes. It prints every candidate's
per-set gains over textbook and the chosen parameters.

`--catalogs PATTERN` evaluates each set's queries over another catalog, `{set}` in the pattern
replaced by the set's name (the distractor catalogs of `research/openapi_distractors.py
--all-sets`: `--catalogs D/{set}-10k.json`).

`compare` applies the same test to whole configs (the hybrid's fusion settings, the semantic
floor): each candidate's nDCG@10 gain over the baseline config on every set, for each method,
and whether it is admissible. `--sample N` keeps the first N queries of the split of a set
that has more (metatool's 21,047 questions each run the model once per config).
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SETS = ["metatool", "toolbench-stable", "restbench", "gorilla-apibench", "seal-tools", "bfcl-multiturn"]
TEXTBOOK = {
    "k1": 1.2,
    "b_name": 0.75,
    "b_description": 0.75,
    "b_parameters": 0.75,
    "b_group": 0.75,
    "name": 1.0,
    "description": 1.0,
    "parameters": 1.0,
    "group": 1.0,
}
CANDIDATES = {
    "k1": [0.6, 0.9, 1.5, 2.0, 2.5, 3.0],
    "b_name": [0.0, 0.3, 0.5, 0.9, 1.0],
    "b_description": [0.3, 0.5, 0.6, 0.9, 1.0],
    "b_parameters": [0.3, 0.5, 0.9, 1.0],
    "b_group": [0.0, 0.3, 0.5, 0.9, 1.0],
    "name": [0.5, 1.5, 2.0, 3.0],
    "description": [0.5, 1.5, 2.0],
    "parameters": [0.0, 0.25, 0.5, 0.75, 1.5],
    "group": [0.0, 0.5, 1.5, 2.0],
}
# One point of nDCG@10: the most a non-textbook value may lose on any set.
TOLERANCE = 0.01
# A tenth of a point: a smaller gain on the worst set is noise.
NOISE = 0.001


def evaluate(args, methods, params=None, config=None):
    """{set: {method: eval JSON}} for the given `[search.bm25]` parameters or config file."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        if params is not None:
            config = Path(tmp) / "bm25.toml"
            config.write_text("[search.bm25]\n" + "".join(f"{k} = {v}\n" for k, v in params.items()))
        for name in SETS:
            d = Path(args.data) / name
            queries = d / "queries.jsonl"
            if args.sample:
                queries = sampled(queries, Path(tmp) / f"{name}.jsonl", args.split, args.sample)
            catalog = args.catalogs.format(set=name) if args.catalogs else d / "catalog.json"
            cmd = [args.bin, "eval", "--catalog", str(catalog), "--queries",
                   str(queries), "--method", methods, "--split", args.split, "--json"]
            if config is not None:
                cmd += ["--config", str(config)]
            lines = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            out[name] = {r["method"]: r for r in map(json.loads, lines.splitlines())}
    return out


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def sampled(queries, out, split, n):
    """The first `n` queries of `split` (the rule of `eval --split`: train when the FNV-1a hash
    of the id is even), written to `out`."""
    kept = []
    for line in queries.read_text().splitlines():
        q = json.loads(line)
        half = "train" if fnv1a64(str(q["id"])) % 2 == 0 else "test"
        if split in ("all", half):
            kept.append(line)
        if len(kept) == n:
            break
    out.write_text("\n".join(kept) + "\n")
    return out


def compare(args):
    methods = args.methods.split(",")
    base = evaluate(args, args.methods, config=args.config)
    print(f"split {args.split}; baseline {args.config}")
    for m in methods:
        print(f"{m:28} " + " ".join(f"{base[s][m]['ndcg@10']:6.4f}" for s in SETS))
    print(f"{'':28} " + " ".join(f"{s[:6]:>6}" for s in SETS))
    for candidate in args.candidates:
        now = evaluate(args, args.methods, config=candidate)
        for m in methods:
            show(f"{Path(candidate).stem} {m}", {s: now[s][m]["ndcg@10"] - base[s][m]["ndcg@10"] for s in SETS})


def ndcg(result):
    return {s: result[s]["bm25"]["ndcg@10"] for s in SETS}


def gains(base, now):
    return {s: now[s] - base[s] for s in SETS}


def admissible(gain):
    wins = sum(g > 0 for g in gain.values())
    return wins * 2 > len(gain) and min(gain.values()) > -TOLERANCE


def show(label, gain):
    cells = " ".join(f"{gain[s] * 100:+6.2f}" for s in SETS)
    mark = "ok" if admissible(gain) else "--"
    print(f"{label:28} {cells}  worst {min(gain.values()) * 100:+6.2f}  {mark}")


def choose(args):
    base = ndcg(evaluate(args, "bm25", TEXTBOOK))
    print(f"split {args.split}; textbook nDCG@10: " + ", ".join(f"{s} {base[s]:.4f}" for s in SETS))
    print(f"{'':28} " + " ".join(f"{s[:6]:>6}" for s in SETS))
    current = dict(TEXTBOOK)
    current_worst = 0.0
    current_ndcg = base
    changed = True
    rounds = 0
    while changed and rounds < 4:
        changed = False
        rounds += 1
        print(f"round {rounds}")
        for key, values in CANDIDATES.items():
            best = None
            for v in values:
                if v == current[key]:
                    continue
                trial = dict(current, **{key: v})
                now = ndcg(evaluate(args, "bm25", trial))
                gain = gains(base, now)
                show(f"{key} = {v}", gain)
                worst = min(gain.values())
                ok = admissible(gain) and admissible(gains(current_ndcg, now))
                if ok and worst >= current_worst + NOISE and (best is None or worst > best[1]):
                    best = (v, worst, now)
            if best is not None:
                current[key] = best[0]
                current_worst = best[1]
                current_ndcg = best[2]
                changed = True
                print(f"  -> {key} = {best[0]} (worst-set gain {best[1] * 100:+.2f})")
    print("chosen:", json.dumps({k: v for k, v in current.items() if v != TEXTBOOK[k]}))


def table(args):
    result = evaluate(args, args.methods, config=args.config)
    methods = args.methods.split(",")
    print("| set | " + " | ".join(f"{m} nDCG@10 | {m} R@10" for m in methods) + " |")
    print("|---|" + "---:|" * (2 * len(methods)))
    for s in SETS:
        cells = []
        for m in methods:
            r = result[s][m]
            cells += [f"{r['ndcg@10']:.3f}", f"{r['recall@10']:.3f}"]
        print(f"| {s} | " + " | ".join(cells) + " |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["table", "choose", "compare"])
    p.add_argument("candidates", nargs="*")
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / "../shared/data"))
    p.add_argument("--bin", default="target/release/toolsearch")
    p.add_argument("--split", default=None)
    p.add_argument("--methods", default="keyword,bm25")
    p.add_argument("--config", default=None)
    p.add_argument("--sample", type=int, default=None)
    p.add_argument("--catalogs", default=None, help="catalog path per set, `{set}` replaced by its name")
    args = p.parse_intermixed_args()
    if args.split is None:
        args.split = "test" if args.what == "table" else "train"
    if args.what == "choose":
        choose(args)
    elif args.what == "compare":
        compare(args)
    else:
        table(args)


if __name__ == "__main__":
    sys.exit(main())
