#!/usr/bin/env python3
"""Size figures of the workspace's code: lines per source file, the largest files, and the
engine crate's public items as its rustdoc lists them.

    python3 scripts/code-stats.py [REPO]    # REPO defaults to the current directory

The public items are read from `target/doc/toolsearch/all.html`: run
`cargo doc --no-deps -p toolsearch` first (with the features you want counted).
"""

import re
import statistics
import sys
from pathlib import Path


def main() -> None:
    repo = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    files = sorted((repo / "crates").glob("*/src/**/*.rs"))
    sizes = {f.relative_to(repo): len(f.read_text().splitlines()) for f in files}
    lines = list(sizes.values())
    print(f"source files: {len(lines)}, lines: {sum(lines)}")
    print(
        f"lines per file: mean {statistics.mean(lines):.0f}, median {statistics.median(lines):.0f}, "
        f"over 500: {sum(n > 500 for n in lines)}"
    )
    print("largest:")
    for path, n in sorted(sizes.items(), key=lambda kv: -kv[1])[:6]:
        print(f"  {n:5} {path}")
    lib = (repo / "crates/toolsearch/src/lib.rs").read_text()
    modules = re.findall(r"^(pub )?mod \w+;", lib, re.M)
    print(f"engine top-level modules: {len(modules)}, public: {sum(bool(m) for m in modules)}")
    all_html = repo / "target/doc/toolsearch/all.html"
    if all_html.exists():
        items = re.findall(r'<li><a href="[^"]+\.html">', all_html.read_text())
        print(f"engine public items (rustdoc all.html): {len(items)}")


if __name__ == "__main__":
    main()
