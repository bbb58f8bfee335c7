"""Printing for people: rich tables and messages on the terminal, plain JSON/CSV for programs.

Rows print as a table when it fits the terminal's width (80 columns when the output is not a
terminal, or $COLUMNS), else as records, one line per column, like psql's `\\x auto`: a wide
row never shrinks to columns of "…". Values are shown as they are, never read as rich markup.
A table shows its first TABLE_ROWS rows and says how many more there are: drawing 200,000 rows
took 16 s, which nobody reads; JSON and CSV, for programs, print every row.
"""

import csv
import json
import os
import sys
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from schemas.status import Quarantined


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """The reader left: reverie.cli ends the command quietly (rich would exit with 1)."""
        self.quiet = True
        raise BrokenPipeError


out = _Console(soft_wrap=True)
err = _Console(stderr=True, soft_wrap=True)
TABLE_ROWS = 1_000


def progress_bar() -> Progress:
    """A progress bar on stderr: what is being done, how far, how long so far."""
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
    )


def fail(message: str) -> int:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    return 1


def warn_quarantined(note: "Quarantined") -> None:
    """Say on stderr that a segment was set aside from the event log, and what was kept of it."""
    kept = f"{note.salvaged} of its {note.rows} events kept" if note.rows is not None else "nothing kept"
    err.print(
        f"[bold yellow]warning:[/] segment {note.segment} could not be read ({note.reason}); "
        f"set aside in {os.path.dirname(note.moved_to)}, {kept} (`reverie status` lists it)",
        highlight=False,
    )


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return value


def print_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str = "table") -> None:
    if fmt == "json":
        for row in rows:
            sys.stdout.write(
                json.dumps({c: _plain(v) for c, v in zip(columns, row, strict=True)}, default=str) + "\n"
            )
    elif fmt == "csv":
        # lines end as every other command's do, not with csv's default (RFC 4180's \r\n)
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_plain(v) for v in row] for row in rows])
    else:
        shown = rows[:TABLE_ROWS]
        cells = [[Text("" if v is None else str(_plain(v))) for v in row] for row in shown]  # never markup
        table = Table(*columns, show_lines=False, header_style="bold")
        for row_cells in cells:
            table.add_row(*row_cells)
        natural = out.measure(table, options=out.options.update_width(1 << 20)).maximum  # not clamped
        if natural > out.width:  # psql's \x auto: too wide to read as a table
            _print_records(columns, cells)
        else:
            out.print(table)
        out.print(f"[dim]{_counted(len(rows), len(shown))}[/]")


def _counted(rows: int, shown: int) -> str:
    """What the footer of a table says of its rows."""
    if shown < rows:
        return (
            f"the first {shown:,} of {rows:,} rows (LIMIT and OFFSET show others; "
            "`reverie sql --csv` or `--json` prints them all)"
        )
    return f"{rows} row{'s' if rows != 1 else ''}"


def _print_records(columns: Sequence[str], rows: list[list[Text]]) -> None:
    """Each row as a record, one "column  value" line each (a long value wraps under itself),
    as psql's expanded display shows rows too wide for the terminal."""
    for n, row in enumerate(rows, start=1):
        out.rule(f"record {n}", align="left", style="dim")
        record = Table.grid(padding=(0, 2))
        record.add_column(style="bold", no_wrap=True)
        record.add_column(overflow="fold")
        for column, cell in zip(columns, row, strict=True):
            record.add_row(Text(column), cell)
        out.print(record)
