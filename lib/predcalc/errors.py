"""One line of an error, one rule everywhere: what a command prints, a record stores and a batch
summary shows. Standard library only, so a Jetson's runtime install has it."""

from __future__ import annotations

LIMIT = 300  # characters: a line a terminal or a table cell shows whole


def one_line(error: BaseException | str, limit: int = LIMIT, *, last: bool = False) -> str:
    """``ValueError: the first line of its message`` (an exception) or the first line of a text;
    ``last=True`` takes the last non-empty line instead (a subprocess's or a traceback's verdict).
    Cut to ``limit`` characters with ``...``."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    line = (lines[-1] if last else lines[0]) if lines else ""
    if isinstance(error, BaseException):
        line = f"{type(error).__name__}: {line}" if line else type(error).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."
