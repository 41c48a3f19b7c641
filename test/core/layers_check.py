#!/usr/bin/env python3
"""The layers of src/ (src/sources.mk), checked from the includes: a file
includes headers of its own layer and of lower ones only (base < model <
core < gpu, cuda < service < backend); PostgreSQL headers only in service/
and backend/; no CUDA
runtime header in a .c file and no PostgreSQL header in cuda/; every file
of src/ in a layer folder; PG_VERSION_NUM tested in src/service/ts_pg_compat.h
alone, where the differences between PostgreSQL versions live.

    test/core/layers_check.py        exit 1 on the first broken rule, listing all
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RANK = {"base": 0, "model": 1, "core": 2, "gpu": 3, "cuda": 3, "service": 4, "backend": 5}
COMPAT = os.path.join("src", "service", "ts_pg_compat.h")
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)


def layer_of(path):
    """The layer of a file, from its folder (src/LAYER/... or cuda/...)."""
    parts = os.path.relpath(path, ROOT).split(os.sep)
    if parts[0] == "cuda":
        return "cuda"
    return parts[1] if len(parts) == 3 and parts[1] in RANK else None


def project_header(name, here):
    """The layer of a quoted include that names a project header, else None."""
    if os.path.exists(os.path.join(os.path.dirname(here), name)) and layer_of(here) == "cuda":
        return "cuda"
    first = name.split("/")[0]
    if first in RANK and os.path.exists(os.path.join(ROOT, "src" if first != "cuda" else "", name)):
        return first
    return None


def problems_of(path):
    """Broken rules of one file."""
    mine = layer_of(path)
    rel = os.path.relpath(path, ROOT)
    if mine is None:
        return [f"{rel}: not in a layer folder of src/"]
    found = []
    text = open(path, encoding="utf-8").read()
    if "PG_VERSION_NUM" in text and rel != COMPAT:
        found.append(f"{rel}: tests PG_VERSION_NUM, which only {COMPAT} may")
    for quote, name in INCLUDE.findall(text):
        theirs = project_header(name, path) if quote == '"' else None
        if theirs is not None:
            if RANK[theirs] > RANK[mine]:
                found.append(f"{rel}: includes {name}, a layer above ({theirs} over {mine})")
        elif quote == '"' and mine not in ("service", "backend"):
            found.append(f"{rel}: includes {name}, a PostgreSQL header outside service/ and backend/")
        elif name.startswith("cuda") and path.endswith(".c"):
            found.append(f"{rel}: includes the CUDA header {name} in C")
    return found


def main():
    files = [os.path.join(d, f) for top in ("src", "cuda")
             for d, _, names in os.walk(os.path.join(ROOT, top))
             for f in names if f.endswith((".c", ".h", ".cu", ".cuh"))]
    problems = [p for f in sorted(files) for p in problems_of(f)]
    for p in problems:
        print("BAD", p)
    counts = {}
    for f in files:
        counts[layer_of(f)] = counts.get(layer_of(f), 0) + 1
    summary = ", ".join(f"{k} {counts.get(k, 0)}" for k in sorted(RANK, key=RANK.get))
    print(f"layers: {len(files)} files ({summary}); {len(problems)} broken rules")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
