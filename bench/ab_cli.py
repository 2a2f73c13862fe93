"""Same-run A/B of two `tamis` CLI builds on one file: the runs interleave (the order alternates
each round), one warm-up round, warm page cache, a fixed thread count. Reports medians of the
scan's own time (`time_total_ns` from `--stats-json`) and of each process's wall time.

    python bench/ab_cli.py --before /tmp/tamis-old --after target/release/tamis \\
        --file lineitem.parquet --runs 7 --threads 1

The queries are TPC-H `lineitem` filters from a needle to Q6; a refactor that claims "no
slower" shows it here before the full suites.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

QUERIES = [
    ("needle `l_orderkey = 3000000`, all columns", "l_orderkey = 3000000", None),
    ("`l_partkey = 12345`, 2 columns", "l_partkey = 12345", "l_orderkey,l_extendedprice"),
    ("Q6's filter, 2 columns",
     "l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
     "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
     "l_extendedprice,l_discount"),
    ("`l_shipdate = DATE '1995-03-15' AND l_returnflag = 'R'`",
     "l_shipdate = DATE '1995-03-15' AND l_returnflag = 'R'", "l_orderkey"),
    ("`l_quantity < 2 OR l_discount > 0.095`, 1 column",
     "l_quantity < 2 OR l_discount > 0.095", "l_orderkey"),
]


def run(binary, path, where, select, threads, stats):
    cmd = [binary, "query", path, "--where", where, "--threads", str(threads),
           "--format", "csv", "--stats-json", stats]
    if select:
        cmd += ["--select", select]
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    with open(stats) as f:
        scan = json.load(f)["time_total_ns"] / 1e6
    return scan, wall * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    builds = {"before": args.before, "after": args.after}
    stats = os.path.join(tempfile.mkdtemp(), "stats.json")
    print(f"| query ({args.threads} thread(s), medians of {args.runs}) | before scan ms | after scan ms "
          "| after / before | before wall ms | after wall ms |")
    print("|---|---|---|---|---|---|")
    for name, where, select in QUERIES:
        times = {"before": [], "after": []}
        for i in range(args.runs + 1):
            for b in (["before", "after"] if i % 2 == 0 else ["after", "before"]):
                t = run(builds[b], args.file, where, select, args.threads, stats)
                if i > 0:
                    times[b].append(t)
        med = {b: (statistics.median(s for s, _ in v), statistics.median(w for _, w in v))
               for b, v in times.items()}
        (bs, bw), (as_, aw) = med["before"], med["after"]
        print(f"| {name} | {bs:.1f} | {as_:.1f} | {as_ / bs:.3f} | {bw:.0f} | {aw:.0f} |")


if __name__ == "__main__":
    main()
