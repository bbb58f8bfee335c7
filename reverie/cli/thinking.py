"""What memory makes of what it holds: `reverie reflect` (an opinion on a question) and `think`
(the scheduled jobs, now)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from workers.thinking.registry import scheduled

if TYPE_CHECKING:
    from reverie.cli.parser import Commands


def add_reflect(commands: Commands) -> None:
    reflect = commands.add_parser(
        "reflect",
        help="form an opinion on QUERY from what memory holds, with the evidence for and against",
        description="Recalls what memory holds on QUERY in this project, then weighs it: each memory "
        "supports or contradicts, weighted by how well it matches, how strong, recent and confident it "
        "is. The project's disposition shapes it: `.reverie.toml` at its root, table [reflect]: "
        "skepticism, literalism, empathy (1 to 5, default 3) and background (text). With extraction's "
        "LLM configured (settings.toml [llm]), the model words and weighs the same evidence, within its "
        "daily budget. The opinion is recorded (opinion.formed, then opinion.revised as evidence "
        "changes); above 0.9 it is flagged for CLAUDE.md's memory section.",
    )
    reflect.add_argument("query", nargs="+", help="the question, e.g. should we keep using DuckDB")
    reflect.add_argument("--project", help="the project's root folder (default: the current folder's)")
    reflect.add_argument("--json", action="store_true", help="print the opinion and its evidence as JSON")
    reflect.set_defaults(func=_reflect, reads="served")


def _reflect(args: argparse.Namespace) -> int:
    from reverie import recalling, reflecting, remembering

    if args.project is not None:
        project, root = recalling.place_named(args.project)
    else:
        project, root = remembering.current_place()
    return reflecting.reflect_command(" ".join(args.query), project, args.json, root or None)


def add_think(commands: Commands) -> None:
    jobs = [follower for follower, _ in scheduled()]
    think = commands.add_parser(
        "think",
        help=f"run memory's scheduled jobs now: {', '.join(f.name for f in jobs)}",
        description="Each runs anyway (`reverie scheduler`, RQ's cron): idle every 5 minutes, the others "
        "every 6 hours. "
        + " ".join(f"{f.name.capitalize()} {f.about}." for f in jobs)
        + " Each derives events, the same ones however often it runs.",
    )
    think.add_argument(
        "job", nargs="?", choices=[*(f.name for f in jobs), "all"], default="all", help="which (default: all)"
    )
    think.add_argument(
        "--now", action="store_true", help="run in this process instead of waiting for a worker to run it"
    )
    think.add_argument(
        "--retry-failed",
        action="store_true",
        help="instead, queue again every derivation that failed every try (`reverie status` counts them; "
        "the scheduler does it hourly) and wait for a worker to run each",
    )
    think.set_defaults(func=_think)


def _think(args: argparse.Namespace) -> int:
    from reverie import thinking

    if args.retry_failed:
        return thinking.retry_failed()
    return thinking.think(args.job, here=args.now)
