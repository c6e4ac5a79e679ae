"""How fast `--hash-compact`'s fingerprint table takes in states as it grows.

Inserts N states into `Fingerprints` (checker/engines/explicit/search.py) and prints the
seconds each further step of states took, so that an insert that slows down as the
table grows shows at once. The states are bit-field-like (k * 8191: consecutive values
of a few fields), of 40 bits, so each is its own fingerprint and its home slot comes
from Fibonacci hashing (`home_slot`).

    .venv/bin/python bench/fingerprints.py 20000000 --capacity 33554432
"""

from __future__ import annotations

import argparse
import time

from checker.engines.explicit.search import Fingerprints


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("states", type=int, help="how many states to insert")
    ap.add_argument("--capacity", type=int, default=1 << 16,
                    help="initial slots, a power of 2 (default 65536: the table grows as in a search)")
    ap.add_argument("--every", type=int, default=2_000_000, help="print the time of each this many states")
    args = ap.parse_args(argv)
    if args.capacity < 1 or args.capacity & (args.capacity - 1):
        ap.error(f"--capacity must be a power of 2, not {args.capacity}")
    table = Fingerprints(40, capacity=args.capacity)
    add = table.add
    start = last = time.perf_counter()
    for k in range(args.states):
        add(k * 8191)
        if (k + 1) % args.every == 0:
            now = time.perf_counter()
            print(f"{k + 1:>12,} states: {now - last:6.2f} s for the last {args.every:,}", flush=True)
            last = now
    print(f"{args.states:,} states in {time.perf_counter() - start:.2f} s; table of {table.size:,} slots, "
          f"{table.count:,} stored")


if __name__ == "__main__":
    main()
