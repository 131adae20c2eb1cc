"""Progress of a long management command, on one line of a terminal or a line per percent in a log.

Shared by ``reembed`` (on stdout) and ``export_tenant`` (on stderr, since its data may go to
stdout).
"""

from __future__ import annotations

import time

from django.core.management.base import OutputWrapper

BAR_WIDTH = 30


class ProgressBar:
    """``[#####.....]  1234/5678  21%  310/s`` on one line, redrawn in place on a terminal."""

    def __init__(self, total: int, out: OutputWrapper) -> None:
        self.total, self.done, self.out = total, 0, out
        self.started = time.monotonic()
        self.interactive = out.isatty()
        self._last_percent = -1  # a log file gets a line per percent, not per batch

    def advance(self, count: int) -> None:
        self.done += count
        self._draw(final=False)

    def _draw(self, *, final: bool) -> None:
        share = self.done / self.total if self.total else 1.0
        if not (self.interactive or final or int(share * 100) > self._last_percent):
            return
        self._last_percent = int(share * 100)
        filled = int(BAR_WIDTH * share)
        rate = self.done / max(time.monotonic() - self.started, 1e-9)
        line = (f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done}/{self.total} "
                f"{share:4.0%} {rate:,.0f}/s")
        if self.interactive:
            self.out.write("\r" + line, ending="\n" if final else "")
        else:
            self.out.write(line)
        self.out.flush()

    def finish(self) -> None:
        self._draw(final=True)
