"""The one-line progress display shared by local (``tokend train``) and remote training."""

from __future__ import annotations

from typing import TextIO


class LineProgress:
    """One line redrawn in place (``\\r``) on ``out``; ``close`` ends it with a newline."""

    WIDTH = 30

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.drawn = False

    def bar(self, fraction: float) -> str:
        """``WIDTH`` cells, the done share (capped at 1) filled with ``#``."""
        filled = int(self.WIDTH * min(fraction, 1.0))
        return "#" * filled + "-" * (self.WIDTH - filled)

    def draw(self, line: str, width: int) -> None:
        """Overwrite the line with ``line`` padded to ``width`` (erasing a longer old one)."""
        self.out.write(line.ljust(width))
        self.out.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.out.write("\n")
            self.out.flush()
