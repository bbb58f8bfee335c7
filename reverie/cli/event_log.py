"""The event log and the tables folded from it: `reverie import` (transcripts into the log),
`sql` (reading both), `replay` (folding the log again) and `embed` (the vectors of the folded
memories, by hand)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from projections.folds import TABLES
from schemas.registry import MEMORY_TABLES

if TYPE_CHECKING:
    from reverie.cli.parser import Commands

_TABLES = "; ".join(f"{family}: {', '.join(tables)}" for family, tables in TABLES.items())
SQL_HELP = (
    "The event log: events(id, kind, ts, recorded_at, project, session_id, agent, source, v, "
    "payload JSON, caused_by), dead_letters(id, recorded_at, stage, reason, head, size, argv). "
    f"Tables, by the family of folds that fills them (projections/folds/): {_TABLES} "
    "(project_roots: each identified root path's project). Analytics: facts_current, "
    "facts_as_of(valid_time, known_time) (bi-temporal: true at valid_time, as known at known_time), "
    "tool_usage_per_day, entity_timeline, memory_health, related_projects (HORA's: shared dependencies "
    f"and entities); memory_texts (every memory recall shows: {', '.join(MEMORY_TABLES)}), "
    "memory_documents (what the embedder embeds), associations "
    "(Hebbian, between entities recalled together) and "
    "embedded (what the vectors hold, by memory_id and content_hash). The projections are the "
    "projector's last published snapshot. Give - to read the query from stdin. Queries only read: "
    "SELECT (DESCRIBE, SHOW, SUMMARIZE) and EXPLAIN of one run; COPY, EXPORT, ATTACH, CREATE, SET... "
    'are refused. To keep results, redirect them: reverie sql --csv "SELECT ..." > out.csv (or --json).'
)


def add_import(commands: Commands) -> None:
    imp = commands.add_parser(
        "import",
        help="backfill events from Claude Code transcripts (idempotent)",
        description="Reads Claude Code transcripts (*.jsonl, subagents included), turns each into the events "
        "its hooks would have recorded, and sends the ones not yet in the log to the running stack. "
        "Importing the same files again adds nothing.",
    )
    imp.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        default=[os.path.join("~", ".claude", "projects")],
        help="transcript files or folders (default: ~/.claude/projects)",
    )
    imp.add_argument("--no-wait", action="store_true", help="do not wait for the dispatcher to archive them")
    imp.set_defaults(func=_import)


def _import(args: argparse.Namespace) -> int:
    from reverie import importing

    return importing.import_transcripts(args.paths, wait=not args.no_wait)


def add_sql(commands: Commands) -> None:
    sql = commands.add_parser(
        "sql", help="run DuckDB SQL over the event log and the projections", description=SQL_HELP
    )
    sql.add_argument(
        "query", nargs="?", help="the SQL query, or - for stdin (none: an interactive shell on a terminal)"
    )
    fmt = sql.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object per row")
    fmt.add_argument("--csv", action="store_true", help="CSV with a header row")
    sql.set_defaults(func=_sql, reads="here")


def _sql(args: argparse.Namespace) -> int:
    from reverie import querying

    return querying.sql(args.query, "json" if args.json else "csv" if args.csv else "table")


def add_replay(commands: Commands) -> None:
    replay = commands.add_parser(
        "replay",
        help="rebuild every projection from the event log and swap it in",
        description="Folds the whole event log, in event-id order, into a fresh store, then swaps it in "
        "atomically (a running projector follows). No thinking worker runs again: derived events are in "
        "the log. A running projector does this by itself when its store cannot be read.",
    )
    replay.set_defaults(func=_replay)


def _replay(args: argparse.Namespace) -> int:
    from reverie import stack

    return stack.replay()


def add_embed(commands: Commands) -> None:
    embed = commands.add_parser(
        "embed",
        help="embed the last snapshot's memories into the LanceDB vectors, once, while the stack is down",
        description="Loads the embedding model ($REVERIE_EMBEDDING_MODEL, default all-MiniLM-L6-v2, "
        "offline) and brings the vectors in step with the snapshot the projector published last, with a "
        "progress bar: memories are chunked, embedded (or taken from the cache of embeddings by content "
        "and model) and written to LanceDB. A running stack does this itself, in its recall service.",
    )
    embed.set_defaults(func=_embed)


def _embed(args: argparse.Namespace) -> int:
    from reverie import stack

    return stack.embed()
