#!/usr/bin/env python3
"""Markdown tables from the criterion results of `cargo bench -p tamis --bench kernels`.

Usage: python3 crates/tamis/benches/kernels_table.py [CRITERION_DIR] > tables.md
CRITERION_DIR defaults to $CARGO_TARGET_DIR/criterion (or target/criterion).
Times are criterion's median estimate per iteration; every m1/select iteration handles 2^20
codes, every m0 iteration 4096 operand pairs.
"""
import json
import os
import re
import sys
from pathlib import Path

N = 1 << 20
M0_OPS = 4096
SELECTIVITIES = [1, 2, 4, 8, 16, 32, 64]


def load(root):
    """full_id -> median ns per iteration."""
    out = {}
    for bench in root.glob("**/new/benchmark.json"):
        est = bench.parent / "estimates.json"
        if not est.exists():
            continue
        full_id = json.loads(bench.read_text())["full_id"]
        out[full_id] = json.loads(est.read_text())["median"]["point_estimate"]
    return out


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def matrix(res, group, ks, method, fmt):
    rows = []
    for k in ks:
        row = [str(k)]
        for s in SELECTIVITIES:
            t = res.get(f"{group}/k{k}/s{s}/{method}")
            row.append(fmt(t) if t is not None else "–")
        rows.append(row)
    return table(["k"] + [f"1/{s}" for s in SELECTIVITIES], rows)


def main():
    default = Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "criterion"
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    res = load(root)
    if not res:
        sys.exit(f"no criterion results under {root}")
    paths = sorted({m.group(1) for i in res if (m := re.match(r"m1/k\d+/s\d+/(\w+)$", i))})
    fast = [p for p in paths if p not in ("decode_all",)]
    print("### M0 — hardware vs naive software (paper Table 1), M ops/s\n")
    rows = []
    for op in ["pext", "pdep", "blsi"]:
        hw, sw = res.get(f"m0/{op}/hw"), res.get(f"m0/{op}/sw")
        rate = lambda t: f"{M0_OPS / t * 1e3:.0f}" if t else "–"
        speed = f"{sw / hw:.1f}x" if hw and sw else "–"
        rows.append([op.upper(), rate(hw), rate(sw), speed])
    print(table(["op", "hardware", "software", "hw speedup"], rows))
    for method in ["decode_all"] + fast:
        print(f"\n### M1 — `{method}`, ns/value (2^20 values)\n")
        print(matrix(res, "m1", range(1, 17), method, lambda t: f"{t / N:.3f}"))
    print("\n### M1 — speedup of the best select-then-decode path over decode_all\n")
    rows = []
    for k in range(1, 17):
        row = [str(k)]
        for s in SELECTIVITIES:
            base = res.get(f"m1/k{k}/s{s}/decode_all")
            best = min(
                ((res[f"m1/k{k}/s{s}/{p}"], p) for p in fast if f"m1/k{k}/s{s}/{p}" in res),
                default=None,
            )
            row.append(f"{base / best[0]:.1f}x ({best[1]})" if base and best else "–")
        rows.append(row)
    print(table(["k"] + [f"1/{s}" for s in SELECTIVITIES], rows))
    sel_paths = sorted(
        {m.group(1) for i in res if (m := re.match(r"select/k\d+/s\d+/(\w+)$", i))}
    )
    for method in sel_paths:
        print(f"\n### select only — `{method}`, G codes/s in (2^20 codes)\n")
        print(matrix(res, "select", range(1, 9), method, lambda t: f"{N / t:.2f}"))


if __name__ == "__main__":
    main()
