#!/usr/bin/env python3
"""Measures when coalescing two nearby byte ranges into one read beats reading them separately.

tamis fetches only the pages that hold surviving rows. Two wanted pages separated by a gap of G
unwanted bytes can be read with two `pread`s, or with one `pread` that also reads the gap. The
second saves a system call (and, on a cold cache, a device round trip) and costs copying G
bytes. This script times both for gaps from 1 KiB to 4 MiB, with the ranges themselves of a
typical page size, warm (file in the page cache) and cold (dropped with posix_fadvise before
every run), and prints the smallest gap at which the separate reads win: the crossover that
`io::COALESCE_GAP` is set from (see BENCHMARKS.md, "I/O policy").

    python bench/io_crossover.py [--page 65536] [--pairs 64] [--runs 7]
"""
import argparse
import os
import statistics
import tempfile
import time

GAPS = [1 << k for k in range(10, 23)]  # 1 KiB .. 4 MiB


def drop(fd: int) -> None:
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def run(fd: int, page: int, gap: int, pairs: int, coalesce: bool, buf: bytearray) -> float:
    """Reads `pairs` pairs of pages, each pair `gap` apart, pairs far apart; seconds."""
    stride = 2 * page + gap + (8 << 20)
    view = memoryview(buf)
    start = time.perf_counter()
    for p in range(pairs):
        base = p * stride
        if coalesce:
            os.preadv(fd, [view[: 2 * page + gap]], base)
        else:
            os.preadv(fd, [view[:page]], base)
            os.preadv(fd, [view[:page]], base + page + gap)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--page", type=int, default=64 << 10)
    ap.add_argument("--pairs", type=int, default=64)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    size = args.pairs * (2 * args.page + max(GAPS) + (8 << 20))
    with tempfile.NamedTemporaryFile(dir=args.dir) as f:
        chunk = os.urandom(1 << 20)
        for _ in range(size // len(chunk) + 1):
            f.write(chunk)
        f.flush()
        fd = f.fileno()
        buf = bytearray(2 * args.page + max(GAPS))
        print(f"page {args.page} B, {args.pairs} pairs, median of {args.runs} runs; "
              "µs per pair: separate / coalesced")
        for cache in ("warm", "cold"):
            crossover = None
            for gap in GAPS:
                times = {}
                for coalesce in (False, True):
                    samples = []
                    for _ in range(args.runs):
                        if cache == "cold":
                            drop(fd)
                        else:
                            run(fd, args.page, gap, args.pairs, coalesce, buf)
                        samples.append(run(fd, args.page, gap, args.pairs, coalesce, buf))
                    times[coalesce] = statistics.median(samples) / args.pairs * 1e6
                if crossover is None and times[False] < times[True]:
                    crossover = gap
                print(f"  {cache:4} gap {gap >> 10:5} KiB: {times[False]:8.1f} / {times[True]:8.1f}")
            print(f"{cache}: separate reads win from a gap of "
                  f"{'never (up to 4 MiB)' if crossover is None else f'{crossover >> 10} KiB'}")


if __name__ == "__main__":
    main()
