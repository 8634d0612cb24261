"""Uses replayed from a retrieval set's train questions, for `toolsearch eval --learn`.

    python3 research/learn_replay.py SET_DIR OUT.jsonl [WRONG] [SHARE] [SEED]

Each train question (the `split` field, else the 64-bit FNV-1a hash of the id is even — the
rule `toolsearch eval --split` applies) is taken as a use of each of its relevant tools:
one `{"query", "tool"}` line per pair. WRONG (default 0) is the share of uses pointed at
another tool of the catalog, drawn at random (models err); SHARE (default 1) the share of the
train questions replayed; SEED (default 1) seeds both draws. Then:

    toolsearch eval --catalog SET_DIR/catalog.json --queries SET_DIR/queries.jsonl \
        --split test --method bm25 --learn OUT.jsonl
"""

import json
import random
import sys


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode():
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def is_train(q):
    if "split" in q:
        return q["split"] == "train"
    return fnv1a64(str(q["id"])) % 2 == 0


def main():
    set_dir, out = sys.argv[1], sys.argv[2]
    wrong = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    share = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
    rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    with open(f"{set_dir}/catalog.json") as f:
        catalog = json.load(f)
    names = sorted(
        f"{g['name']}/{t['name']}" for g in catalog.get("groups", []) for t in g["tools"]
    )
    written = 0
    with open(f"{set_dir}/queries.jsonl") as f, open(out, "w") as w:
        for line in f:
            q = json.loads(line)
            if not is_train(q) or rng.random() >= share:
                continue
            for tool in q["relevant"]:
                if rng.random() < wrong:
                    tool = rng.choice([n for n in names if n != tool])
                w.write(json.dumps({"query": q["query"], "tool": tool}) + "\n")
                written += 1
    print(f"{written} uses written to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
