"""Carrying memory elsewhere: `reverie export json` (a project's events, to a file),
`reverie import-json` (them, into this machine's stack) and `reverie export markdown` (the memory
section's three files, to read and share)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reverie.cli.parser import Commands

EXPORT_JSON_HELP = (
    "Writes a project's memory as events: every event the log holds of the project (what its sessions "
    "did and what the workers learned from it, memories scoped global made there included), with its "
    "id, times, source, payload and causes, one JSON object a line after a header naming the format "
    "and its version. `reverie import-json FILE` on another machine, or a teammate's, adds what was "
    "observed to its memory (and your decisions, if they say so); nothing is doubled however often it is "
    "imported. Reads the event log: the stack need not run."
)


def add_export(commands: Commands) -> None:
    export = commands.add_parser(
        "export",
        help="carry memory elsewhere: a project's events as JSON Lines (`export json`), or its memory "
        "section as Markdown (`export markdown`)",
        description="Writes memory out, to carry it to another machine or a teammate.",
    )
    formats = export.add_subparsers(dest="format", metavar="FORMAT", required=True)
    as_json = formats.add_parser(
        "json", help="a project's events, for `reverie import-json`", description=EXPORT_JSON_HELP
    )
    as_json.add_argument(
        "--project",
        help="the project: its root folder, e.g. ~/app, or its name as `reverie sql` shows it "
        "(default: the current folder's project, as `reverie remember` finds it)",
    )
    as_json.add_argument("-o", "--output", metavar="FILE", help="where to write it (default: stdout)")
    as_json.set_defaults(func=_export_json, reads="here")
    as_markdown = formats.add_parser(
        "markdown",
        help="a project's memory section as three Markdown files (facts, preferences, episodes)",
        description="Writes facts.md, preferences.md and episodes.md into DIR: the parts of the memory "
        "section `reverie curate` writes into CLAUDE.md (what reverie trusts: current, not forgotten, "
        "verbatim), to read, diff or share. Reads the last snapshot: the stack need not run.",
    )
    as_markdown.add_argument(
        "directory", metavar="DIR", help="where to write the three files (made if missing)"
    )
    as_markdown.add_argument(
        "--project",
        help="the project: its root folder, e.g. ~/app, or its name as `reverie sql` shows it "
        "(default: the current folder's project)",
    )
    as_markdown.set_defaults(func=_export_markdown, reads="here")


def _export_json(args: argparse.Namespace) -> int:
    from reverie import exporting
    from reverie.recalling import project_named
    from reverie.remembering import current_project

    return exporting.export_json(project_named(args.project) or current_project(), args.output)


def _export_markdown(args: argparse.Namespace) -> int:
    from reverie import curating
    from reverie.recalling import project_named
    from reverie.remembering import current_project

    return curating.export_markdown_command(project_named(args.project) or current_project(), args.directory)


def add_import_json(commands: Commands) -> None:
    imp = commands.add_parser(
        "import-json",
        help="add the events of a `reverie export json` file to memory (idempotent)",
        description="Sends the events of FILE (written by `reverie export json`, on another machine or by "
        "a teammate) to the running stack, each under its own id: those the event log holds already are "
        "skipped, so importing a file twice adds nothing. A file is data from outside: what was observed "
        "(prompts, tool uses, sessions) lands; what its workers derived (facts, episodes, preferences...) "
        "is never imported, this stack's workers derive it again; its user's decisions (remember, forget, "
        "pin, promote, approve, correct, memory for every project) land only with --with-decisions, and "
        "wait for your approval before CLAUDE.md (`reverie curate --review`). A line that is not a valid "
        "event is kept as a dead letter with the reason.",
    )
    imp.add_argument("file", metavar="FILE", help="the export")
    imp.add_argument(
        "--with-decisions",
        action="store_true",
        help="import the file's decisions too (see them first with --dry-run)",
    )
    imp.add_argument(
        "--dry-run",
        action="store_true",
        help="list the file's decisions, then what an import would do; send nothing (the stack need not run)",
    )
    imp.add_argument("--no-wait", action="store_true", help="do not wait for the dispatcher to archive them")
    imp.set_defaults(func=_import_json)


def _import_json(args: argparse.Namespace) -> int:
    from reverie import exporting

    return exporting.import_json(
        args.file, wait=not args.no_wait, with_decisions=args.with_decisions, dry_run=args.dry_run
    )
