"""`reverie sql`."""

import os
import sys

import duckdb

from projections.event_log import Quarantined
from projections.sql import CannotAnswer, run
from reverie.console import err, fail, print_rows
from schemas.settings import Settings


def sql(text: str | None, fmt: str) -> int:
    settings = Settings.from_env()
    if text is None and sys.stdin.isatty():
        from reverie.shell import run_shell

        return run_shell(settings)
    if text is None or text == "-":
        text = sys.stdin.read()
    try:
        result = run(settings, text, warn_quarantined)
    except (duckdb.Error, CannotAnswer) as e:
        return fail(str(e))
    print_rows(result.columns, result.rows, fmt)
    return 0


def warn_quarantined(note: Quarantined) -> None:
    """Say on stderr that a segment was set aside while answering, and what was kept of it."""
    kept = f"{note.salvaged} of its {note.rows} events kept" if note.rows is not None else "nothing kept"
    err.print(
        f"[bold yellow]warning:[/] segment {note.segment} could not be read ({note.reason}); "
        f"set aside in {os.path.dirname(note.moved_to)}, {kept} (`reverie status` lists it)",
        highlight=False,
    )
