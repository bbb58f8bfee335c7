"""`reverie sql`."""

import sys

import duckdb

from projections.sql import CannotAnswer, run
from reverie.console import fail, print_rows, warn_quarantined
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
