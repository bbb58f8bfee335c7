"""Friction analysis: `reverie friction`, how the sessions went and what to avoid."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reverie.cli.parser import Commands


def add_friction(commands: Commands) -> None:
    friction = commands.add_parser(
        "friction",
        help="how the sessions went: friction signals, BAD/FRICTION/ROUGH/OK, antigens to avoid",
        description="Reads Claude Code transcripts (PATH, default: the project's under ~/.claude/projects) "
        "and, without PATH, the project's sessions in the event log; finds seed 004's 14 friction signals "
        "in each session (user_intervention 10, session_abandoned 10, false_success 8, no_resolution 8, "
        "tool_loop 6, rapid_exit 6, interrupt_cascade 5, user_curse 5, request_interrupted 2.5, "
        "exit_error 1, repeated_question 1, long_silence 0.5, user_negation 0.5, compaction 0.5), scores "
        "and classes them (BAD from 20, FRICTION from 10, ROUGH from 3, else OK), and writes "
        "friction_analysis.json, friction_summary.json, friction_raw.jsonl, antigen_candidates.json and "
        "antigen_review.md to the project's .claude/friction/. What the user stops the agent doing in 3 "
        "turns or more (high confidence from 5) is recorded as a behavioural preference.",
    )
    friction.add_argument(
        "path", nargs="?", metavar="SESSIONS_PATH", help="transcript files or a folder of them"
    )
    friction.add_argument(
        "--project", help="the project's folder (default: the current folder's project, as the hooks name it)"
    )
    friction.add_argument(
        "--out", metavar="DIR", help="where the files go (default: PROJECT/.claude/friction)"
    )
    friction.add_argument(
        "--no-record", action="store_true", help="write the files only: record no behavioural preference"
    )
    friction.set_defaults(func=_friction)


def _friction(args: argparse.Namespace) -> int:
    from reverie import friction

    return friction.run(args.path, args.project, args.out, record=not args.no_record)
