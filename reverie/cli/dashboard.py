"""The dashboard: `reverie dashboard`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reverie.cli.parser import Commands

_DESCRIPTION = """\
Memory in a browser: the knowledge graph through time, what each prompt was given and why,
sessions, tiers and what was forgotten, preferences, failures, opinions, communities. What you
change there (forget, remember) is recorded as an event, as `reverie forget` records it.

`reverie up` serves it (unless --no-dashboard): this prints that URL. Without a running stack,
or with --port or --serve, it is served from here until Ctrl-C. It listens on 127.0.0.1 only;
the URL carries a token once, then a cookie does; keep the URL to yourself.
"""


def add_dashboard(commands: Commands) -> None:
    dashboard = commands.add_parser(
        "dashboard",
        help="memory in a browser: graph, prompts, sessions, health (prints its URL)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    dashboard.add_argument(
        "--port", type=int, metavar="N", help="serve it from here on this port (default: the kept one)"
    )
    dashboard.add_argument("--open", action="store_true", help="open it in the web browser")
    dashboard.add_argument(
        "--serve",
        action="store_true",
        help="serve it from here even if the stack serves one (the Procfile's)",
    )
    dashboard.set_defaults(func=_dashboard)


def _dashboard(args: argparse.Namespace) -> int:
    from reverie.dashboard.server import dashboard

    if args.port is not None and not 0 <= args.port <= 65535:
        from reverie.console import fail

        return fail(f"--port must be between 0 and 65535, not {args.port}")
    return dashboard(args.port, args.open, args.serve)
