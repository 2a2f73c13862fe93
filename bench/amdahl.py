"""What a 2-core machine can tell about 16 cores: each TPC-H query through `tamis sql` at N
partitions, in a process confined to one CPU and then to two (same plan, same partitions), and
at one partition on one CPU. Issue 42's scaling problems were serial phases and work that grows
with the partition count; both show here without a many-core host.

- ``work``: CPU seconds (user + system) at N partitions over those at one partition, one CPU
  each. Above 1 the partitioned plan does more work (repartitioning, per-partition filters,
  a filter probed N times), which N cores pay too.
- ``serial``: Amdahl's serial fraction from the same plan on one and two CPUs,
  ``s = 2 * T2 / T1 - 1`` (0: the second CPU halves the time; 1: it does nothing). It counts
  the process start and planning (about 15 ms), so short queries read high.
- ``16-core guess``: ``T1(1 partition) / (T1(N) * (s + (1 - s) / 16))``, the scaling a 16-core
  host would show if these two terms were all.

    python bench/amdahl.py --tamis target/release/tamis --tables data/tpch-sf1 --runs 5
    python bench/amdahl.py ... --queries q01,q17 --partitions 16 --no-runtime-filters

Medians of ``--runs`` interleaved runs; the page cache is off (``--page-cache 0``), so every run
decompresses what it reads, as the peers do. A guess, not a measurement: the many-core numbers
are bench/scaling.sh's on a host that has the cores.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUERIES = Path(__file__).resolve().parent / "tpch" / "queries"


def timed(cmd, cpus):
    """Wall and CPU seconds of `cmd` confined to `cpus` (a list of CPU numbers)."""
    start = time.perf_counter()
    proc = subprocess.Popen(["taskset", "-c", ",".join(map(str, cpus))] + cmd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr.read().decode()}")
    return wall, usage.ru_utime + usage.ru_stime


def estimate(t_one, t1, t2, cores=16):
    """(serial fraction, guessed speedup at `cores`) from the wall times at one partition on
    one CPU (`t_one`) and at N partitions on one CPU (`t1`) and on two (`t2`)."""
    serial = min(1.0, max(0.0, 2 * t2 / t1 - 1))
    return serial, t_one / (t1 * (serial + (1 - serial) / cores))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tamis", required=True, help="the tamis CLI binary")
    ap.add_argument("--tables", required=True, help="directory of TPC-H tables")
    ap.add_argument("--queries", default="", help="e.g. q01,q17 (default: all 22)")
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-runtime-filters", action="store_true")
    args = ap.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        sys.exit("needs two CPUs")
    cpu0, cpu1 = sorted(os.sched_getaffinity(0))[:2]
    names = [q for q in args.queries.split(",") if q] or sorted(p.stem for p in QUERIES.glob("q*.sql"))
    print(f"`tamis sql` at {args.partitions} partitions, runtime filters "
          f"{'off' if args.no_runtime_filters else 'on'}, medians of {args.runs}\n")
    print("| query | 1 CPU, 1 partition | 1 CPU, N | 2 CPUs, N | work (CPU N / CPU 1) "
          "| serial | 16-core guess |")
    print("|---|---|---|---|---|---|---|")
    guesses = []
    for name in names:
        sql = (QUERIES / f"{name}.sql").read_text()

        def cmd(threads):
            c = [args.tamis, "sql", sql, "--tables", args.tables, "--threads", str(threads),
                 "--format", "csv", "--page-cache", "0"]
            return c + (["--no-runtime-filters"] if args.no_runtime_filters else [])

        configs = {"one": (cmd(1), [cpu0]), "n1": (cmd(args.partitions), [cpu0]),
                   "n2": (cmd(args.partitions), [cpu0, cpu1])}
        for c, cpus in configs.values():  # warm-up: the files in the OS cache
            timed(c, cpus)
        samples = {k: [] for k in configs}
        for r in range(args.runs):
            order = list(configs) if r % 2 == 0 else list(reversed(configs))
            for k in order:
                samples[k].append(timed(*configs[k]))
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
               for k, v in samples.items()}
        t_one, cpu_one = med["one"]
        t1, cpu_n = med["n1"]
        t2, _ = med["n2"]
        serial, guess = estimate(t_one, t1, t2)
        guesses.append(guess)
        print(f"| {name} | {t_one * 1e3:.0f} ms | {t1 * 1e3:.0f} ms | {t2 * 1e3:.0f} ms "
              f"| {cpu_n / cpu_one:.2f} | {serial:.2f} | {guess:.1f}x |", flush=True)
    print(f"\ngeometric mean of the 16-core guesses: "
          f"{statistics.geometric_mean(guesses):.1f}x")


if __name__ == "__main__":
    main()
