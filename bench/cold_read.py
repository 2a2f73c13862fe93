#!/usr/bin/env python3
"""Cold-cache bytes: what the disk delivers (/proc/self/io read_bytes) against what tamis says
it read, for TPC-H Q6 on one file, with the file dropped from the page cache before each run.

    python bench/cold_read.py data/bench/tpch-sf1/lineitem.parquet [--runs 3]

A ratio near 1.00 means the kernel's readahead adds nothing to tamis's planned reads.
"""

import argparse
import os

# Peers decompress every page of every query: tamis's page cache (on by default in a process
# that can hit it) is off here unless TAMIS_PAGE_CACHE asks for it (bench/page_cache.py and
# bench/disk_cache.py measure the cache).
os.environ.setdefault("TAMIS_PAGE_CACHE", "0")

import tamis

Q6 = ("l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
      "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24")


def read_bytes() -> int:
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    raise RuntimeError("/proc/self/io has no read_bytes")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("path")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    for _ in range(args.runs):
        fd = os.open(args.path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        before = read_bytes()
        m = tamis.explain(args.path, where=Q6, columns=["l_extendedprice", "l_discount"],
                          threads=1)
        disk = read_bytes() - before
        print(f"tamis read {m['bytes_read'] / 2**20:.1f} MiB in {m['requests']} requests; "
              f"disk {disk / 2**20:.1f} MiB; ratio {disk / m['bytes_read']:.2f}")


if __name__ == "__main__":
    main()
