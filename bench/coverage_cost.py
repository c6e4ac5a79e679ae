"""What coverage costs (issue 30's goal: a default run within 5% of `--no-coverage`):
`check FILE --brief --workers 1` with and without `--no-coverage`, the least CPU seconds (user +
system of the child) of --repeats runs each, and their ratio.

    python bench/coverage_cost.py [--repeats N] [--check PATH] [TARGET...]

A TARGET is `FILE.spec[:VARIANT][,NAME=VALUE...]` (the defines are passed as -D); the
default targets are the bench models at their largest default sizes and the shipped
models' biggest variants under sc, x86-TSO and lkmm. Coverage is recorded by the
search itself (engines/coverage.py), so the difference is the marks in the step code
and the summary after the search; on a shared machine the least of many runs is the one
least disturbed, and differences below the runs' spread mean nothing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from run import check_command  # noqa: E402
from startup import least_cpu  # noqa: E402

TARGETS = ("bench/models/philosophers.spec:base,N=9", "bench/models/kvm_vcpus.spec:base,N=3",
           "models/pi_timer.spec:base", "models/pi_timer.spec:base_tso", "models/pi_timer.spec:base_lkmm",
           "models/timer_reprogram.spec:cancel_without_wait", "models/timer_advance_tuning.spec:base_tso",
           "models/hlt_if_gating.spec:base_lkmm")


def command(check: list[str], target: str) -> list[str]:
    where, *defines = target.split(",")
    path, _, variant = where.partition(":")
    cmd = [*check, str(ROOT / path), "--brief", "--workers", "1"]  # one process: no parallel start-up in the times
    if variant:
        cmd += ["--variant", variant]
    for d in defines:
        cmd += ["-D", d]
    return cmd


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--check", help="the `check` to run (default: the one next to this Python, else PATH)")
    ap.add_argument("targets", nargs="*", default=list(TARGETS))
    args = ap.parse_args(argv)
    check = check_command(args.check)
    print(f"{'target':52} {'default':>8} {'--no-coverage':>13} {'ratio':>6}")
    for t in args.targets:
        cmd = command(check, t)
        with_cov = least_cpu(cmd, args.repeats)
        without = least_cpu([*cmd, "--no-coverage"], args.repeats)
        print(f"{t:52} {with_cov:8.3f} {without:13.3f} {with_cov / without:6.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
