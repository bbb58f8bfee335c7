"""The stack as a whole: `reverie up`, `down` and `status`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reverie.cli.parser import Commands


def add_up(commands: Commands) -> None:
    up = commands.add_parser(
        "up", help="start the stack: embedded server, dispatcher, workers (Ctrl-C stops it)"
    )
    up.add_argument(
        "--detach", "-d", action="store_true", help="run in the background; stop with `reverie down`"
    )
    up.add_argument("--workers", type=int, default=1, metavar="N", help="RQ worker processes (default: 1)")
    up.add_argument(
        "--no-dashboard", action="store_true", help="do not serve the dashboard (`reverie dashboard`)"
    )
    up.set_defaults(func=_up)


def _up(args: argparse.Namespace) -> int:
    from reverie import stack

    return stack.up(detach=args.detach, workers=args.workers, dashboard=not args.no_dashboard)


def add_down(commands: Commands) -> None:
    down = commands.add_parser("down", help="stop a stack started with `reverie up --detach`")
    down.set_defaults(func=_down)


def _down(args: argparse.Namespace) -> int:
    from reverie import stack

    return stack.down()


def add_status(commands: Commands) -> None:
    status = commands.add_parser(
        "status",
        help="stream length, pending entries, lag, spool, dead letters, quarantined segments, workers",
    )
    status.add_argument("--json", action="store_true", help="print one JSON object")
    status.set_defaults(func=_status)


def _status(args: argparse.Namespace) -> int:
    from reverie import stack

    return stack.status(as_json=args.json)
