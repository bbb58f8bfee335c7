"""Asking and telling memory: `reverie recall`, `why`, `remember` and `forget`."""

from __future__ import annotations

import argparse
import typing
from typing import TYPE_CHECKING

from schemas.categories import CATEGORIES
from schemas.memory import Category

if TYPE_CHECKING:
    from reverie.cli.parser import Commands

FACT_CATEGORIES: tuple[str, ...] = typing.get_args(Category)

RECALL_HELP = (
    "Runs recall as the hooks do: task classification, 3 to 5 queries, four retrievers "
    "(semantic, full text, graph, temporal) whose candidates are scored on every component (the model "
    "on the memory and on the turns around it, BM25 on the memory and on its session, the graph), "
    "fused by the sum of z-scores (or --fusion rrf), then weighed by ACT-R activation, FSRS "
    "retrievability, recency and confidence. Asks the warm service (`reverie serve`, run by "
    "`reverie up`) if it runs, else loads the model here (seconds)."
)


def add_recall(commands: Commands) -> None:
    recall = commands.add_parser(
        "recall", help="ask memory: the memories that matter for QUERY, best first", description=RECALL_HELP
    )
    recall.add_argument("query", help="what to remember about")
    recall.add_argument("--limit", type=int, default=10, help="how many memories (default: 10)")
    where = recall.add_mutually_exclusive_group()
    where.add_argument(
        "--project",
        help="this project's memories (and those that hold everywhere): its root folder, e.g. ~/app "
        "(default: the current folder's project, as `reverie remember` finds it)",
    )
    where.add_argument("--all-projects", action="store_true", help="the memories of every project")
    recall.add_argument(
        "--as-of",
        metavar="TIME",
        help="time travel: memory as it stood then (ISO date or time, UTC by default)",
    )
    recall.add_argument(
        "--type", choices=["world", "experience", "opinion", "observation"], help="one network"
    )
    recall.add_argument(
        "--category",
        choices=[*FACT_CATEGORIES, *CATEGORIES],
        metavar="C",
        help=f"facts of one category ({', '.join(FACT_CATEGORIES)}), or remembered memories of one of "
        f"Memory Fabric's: {', '.join(CATEGORIES)}",
    )
    _scope_flags(recall, "only remembered memories")
    _ranking_flags(recall)
    recall.add_argument(
        "--with-questions",
        action="store_true",
        help="keep the questions asked before, which recall leaves out as the hook does: a question "
        "is no answer (what answered it is a memory of its own)",
    )
    recall.add_argument("--explain", action="store_true", help="every component of each score")
    recall.add_argument("--json", action="store_true", help="the whole recall as JSON")
    recall.set_defaults(func=_recall, reads="served")


def _ranking_flags(recall: argparse.ArgumentParser) -> None:
    """How recall's candidates make one ranking."""
    recall.add_argument(
        "--fusion",
        choices=["zscore", "rrf"],
        default="zscore",
        help="how components make one score: the sum of their z-scores (default) or Reciprocal Rank Fusion",
    )
    recall.add_argument(
        "--weighting",
        choices=["cognitive", "fabric"],
        default="cognitive",
        help="relevance weighed by strength and confidence (default), or Memory Fabric's weights: "
        "recency 0.3, relevance 0.5, authority 0.2",
    )
    recall.add_argument(
        "--dedup",
        action="store_true",
        help="merge results whose words overlap above 0.85 (Jaccard); the kept one is cross-validated",
    )


def _scope_flags(parser: argparse.ArgumentParser, what: str) -> None:
    """Memory Fabric's flags, on `remember` and `recall`."""
    outcome = parser.add_mutually_exclusive_group()
    outcome.add_argument(
        "--success", dest="outcome", action="store_const", const="success", help=f"{what} a way that worked"
    )
    outcome.add_argument(
        "--failed", dest="outcome", action="store_const", const="failed", help=f"{what} an anti-pattern"
    )
    parser.add_argument("--agent", metavar="A", help=f"{what} agent A's own (a subagent type)")
    parser.add_argument(
        "--global", dest="everywhere", action="store_true", help=f"{what} holding in every project"
    )


def _recall(args: argparse.Namespace) -> int:
    from reverie import recalling
    from reverie.console import fail
    from reverie.remembering import current_project
    from schemas.recall import RecallRequest

    if args.limit < 1:
        return fail("--limit must be at least 1")
    try:
        as_of = recalling.parse_time(args.as_of) if args.as_of else None
    except ValueError:
        return fail(f"--as-of: not an ISO date or time: {args.as_of!r}")
    request = RecallRequest(
        prompt=args.query,
        project=None if args.all_projects else recalling.project_named(args.project) or current_project(),
        limit=args.limit,
        as_of=as_of,
        network=args.type,
        category=args.category,
        fusion=args.fusion,
        weighting=args.weighting,
        dedup=args.dedup,
        outcome=args.outcome,
        agent=args.agent,
        global_only=args.everywhere,
        answers_only=not args.with_questions,
    )
    return recalling.recall(request, "json" if args.json else "table", args.explain)


def add_why(commands: Commands) -> None:
    why = commands.add_parser(
        "why",
        help="where a memory (a fact, an entity, an episode, one remembered...) comes from, down to "
        "the transcript's line",
        description="Shows what memory holds under ID (a fact, an entity, an episode, any memory recall "
        "shows; a prefix only it has will do), the derived events that made and changed it (asserted, "
        "reconsolidated, superseded...), the events each came from, and the transcript file and line "
        "that record those; for a memory no worker derived (`reverie remember`'s, a prompt), the event "
        "that recorded it and by whom. Reads the projections' last snapshot and the event log.",
    )
    why.add_argument("id", help="e.g. fact:9c4aa661d8, file:2b7e…, episode:…, or the id recall shows")
    why.add_argument("--json", action="store_true", help="the whole answer as one JSON object")
    why.set_defaults(func=_why, reads="served")


def _why(args: argparse.Namespace) -> int:
    from reverie import explaining

    return explaining.explain(args.id, args.json)


def add_remember(commands: Commands) -> None:
    remember = commands.add_parser(
        "remember",
        help="remember TEXT for later sessions (a decision, a pattern, what failed...)",
        description="Records TEXT as a memory of the current folder's project, which recall then finds "
        "like any other. Its category is told from the text when --category is not given. The event goes "
        "to the stack, or to the spool while the stack is down: nothing is lost.",
    )
    remember.add_argument("text", nargs="+", help="what to remember")
    remember.add_argument("--category", choices=CATEGORIES, metavar="C", help=", ".join(CATEGORIES))
    _scope_flags(remember, "remember it as")
    remember.set_defaults(func=_remember)


def _remember(args: argparse.Namespace) -> int:
    from reverie import remembering

    return remembering.remember_command(
        " ".join(args.text), args.category, args.outcome, args.agent, args.everywhere
    )


def add_forget(commands: Commands) -> None:
    forget = commands.add_parser(
        "forget",
        help="hide a memory from recall (an event: nothing is deleted)",
        description="Records that the memory ID (as `reverie recall` shows it) is to be forgotten: "
        'recall no longer returns it; `reverie sql "select * from forgotten"` lists what was. An id no '
        "memory of this project has is refused (exit status 1).",
    )
    forget.add_argument("id", help="the memory's id")
    forget.add_argument("--reason", default="", help="why (kept with the event)")
    forget.set_defaults(func=_forget)


def _forget(args: argparse.Namespace) -> int:
    from reverie import remembering

    return remembering.forget_command(args.id, args.reason)


def add_curate(commands: Commands) -> None:
    curate = commands.add_parser(
        "curate",
        help="write what reverie trusts into CLAUDE.md's memory section (Claude Code loads it every session)",
        description="Writes the project's memory section between <!-- MEMORY:START --> and "
        "<!-- MEMORY:END --> in its CLAUDE.md (appended at the end when the file has no such block; "
        "every byte outside it stays as it is): # Project Memory, ## Facts (what you remembered, "
        "observations you promoted, and the project's current standing facts, one line each), "
        "## Preferences (pinned, stated, or recurring in 5+ sessions) and ## Recent Episodes (the last "
        "5 episodes and stashes), at most 150 lines; and the same parts as .claude/memory/facts.md, "
        "preferences.md and episodes.md. Only what recall trusts goes in: current, not forgotten, "
        "confident, verbatim, each one line of plain text (commands, paths and @words in code spans: "
        "nothing Claude Code would load or hide). CLAUDE.md is loaded as instructions: what you wrote "
        "(reverie remember, the dashboard, /reverie:remember), what you approved, and facts observed in "
        "your sessions enter by themselves; the rest (what the agent remembered on its own, imports, "
        "what prompts stated) waits for your yes: --review. Every file is checked before any is written "
        "(inside the project, a regular file, writable) and what you write meanwhile is kept. Running it "
        "again with nothing new changes nothing. Reads the last snapshot: the stack need not run.",
    )
    curate.add_argument(
        "--project",
        help="the project's folder, where its CLAUDE.md is (default: the current folder's project root)",
    )
    curate.add_argument("--dry-run", action="store_true", help="show the changes as diffs; write nothing")
    curate.add_argument(
        "--review",
        action="store_true",
        help="first ask, one by one, about the memories that wait for your yes (y: write it there, n: never, "
        "Enter: not now, q: stop; answers are read from stdin), then write",
    )
    curate.set_defaults(func=_curate, reads="here")


def _curate(args: argparse.Namespace) -> int:
    from reverie import curating

    return curating.curate_command(args.project, args.dry_run, args.review)


def add_stash(commands: Commands) -> None:
    stash = commands.add_parser(
        "stash",
        help="keep where the current session stands (goal, decisions, open threads, next steps) for later",
        description="Writes .claude/stash/NAME.md at the project's root and records it as an event: the "
        "session's goal (the user's first prompt), the project's last decisions, the errors it left (open "
        "threads), the next steps its agent last named and the files it touched, read from the session's "
        "events. The current session is the project's latest one. `reverie curate` lists stashes among "
        "the recent episodes of CLAUDE.md's memory section. Reads the last snapshot; the event goes to "
        "the stack, or to the spool while it is down.",
    )
    stash.add_argument("name", nargs="?", help="the stash's name (default: the day and the session's id)")
    stash.add_argument("--session", help="the session to stash (default: the project's latest)")
    stash.add_argument("--project", help="the project's folder (default: the current folder's project root)")
    stash.set_defaults(func=_stash)


def _stash(args: argparse.Namespace) -> int:
    from reverie import stashing

    return stashing.stash_command(args.name, args.project, args.session)
