"""`reverie sql` with no query, on a terminal: an interactive shell over the same views.

A statement ends with `;` and may span lines. Each one runs as `reverie sql QUERY` would, on
a fresh read-only connection, so it sees the latest snapshot the projector published.
`.tables` lists what there is to query, `.help` says how, `.quit` (or Ctrl-D) leaves.
"""

import contextlib
from collections.abc import Callable

import duckdb

from projections.sql import CannotAnswer, run
from reverie.console import err, out, print_rows, warn_quarantined
from schemas.settings import Settings

HELP = """Type SQL ending with ';' (it may span lines); it only reads. .tables lists the tables
and views, .quit or Ctrl-D leaves. `reverie sql --help` describes every view; to keep results,
run `reverie sql --csv "SELECT ..." > out.csv`."""


def run_shell(settings: Settings, read_line: Callable[[str], str] = input) -> int:
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401 (line editing and history for input())
    out.print(f"reverie sql: {settings.home}. {HELP}")
    pending: list[str] = []
    while True:
        try:
            line = read_line("   ...> " if pending else "reverie> ")
        except EOFError:
            out.print()
            return 0
        except KeyboardInterrupt:
            out.print()
            pending = []
            continue
        if not pending and line.strip() in (".quit", ".exit"):
            return 0
        if not pending and line.strip() in (".help", "help"):
            out.print(HELP)
            continue
        if not pending and line.strip() == ".tables":
            line = "SELECT table_name AS name, table_type AS kind FROM information_schema.tables ORDER BY 1;"
        pending.append(line)
        if line.rstrip().endswith(";"):
            _run(settings, "\n".join(pending))
            pending = []


def _run(settings: Settings, sql: str) -> None:
    try:
        result = run(settings, sql, warn_quarantined)
    except (duckdb.Error, CannotAnswer) as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False)
        return
    print_rows(result.columns, result.rows)
