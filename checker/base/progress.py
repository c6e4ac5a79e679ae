"""Progress lines for long searches: on a terminal about once a second, silent in pipes
and CI unless forced."""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO


def peak_memory_mib() -> float:
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    except Exception:  # pragma: no cover - not on every platform
        return 0.0


class Progress:
    def __init__(self, enabled: bool | None = None, stream: TextIO | None = None, interval: float = 1.0):
        self.stream = stream or sys.stderr
        if enabled is None:
            enabled = self.stream.isatty() and not os.environ.get("CI")
        self.enabled = enabled
        self.interval = interval
        self.start = time.monotonic()
        self.last = self.start
        self.shown = False
        self.label = ""

    def tick(self, states: int, queue: int, depth: int, memory: float | None = None) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < self.interval:
            return
        self.last = now
        rate = states / max(now - self.start, 1e-9)
        mib = memory if memory is not None else peak_memory_mib()
        line = (f"{self.label}states {states:,}  queue {queue:,}  depth {depth}  "
                f"{rate:,.0f} states/s  {mib:,.0f} MiB")
        self.stream.write("\r" + line[:120].ljust(80))
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        if self.enabled and self.shown:
            self.stream.write("\r" + " " * 100 + "\r")
            self.stream.flush()
            self.shown = False
