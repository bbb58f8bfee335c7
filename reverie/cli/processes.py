"""The Procfile's processes, which `reverie up` starts (workers/supervisor.py): `reverie serve`,
`server`, `dispatch`, `project`, `worker` and `scheduler`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reverie.cli.parser import Commands


def add_serve(commands: Commands) -> None:
    serve = commands.add_parser("serve", help="(Procfile) run the warm recall service on a unix socket")
    serve.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    from reverie import stack

    return stack.serve()


def add_server(commands: Commands) -> None:
    server = commands.add_parser(
        "server", help="(Procfile) run the embedded Redis-compatible server in the foreground"
    )
    server.set_defaults(func=_server)


def _server(args: argparse.Namespace) -> int:
    from reverie import stack

    return stack.server()


def add_dispatch(commands: Commands) -> None:
    dispatch = commands.add_parser("dispatch", help="(Procfile) run the dispatcher: stream -> event log")
    dispatch.add_argument("--name", help="consumer name in the group (default: this host's name)")
    dispatch.set_defaults(func=_dispatch)


def _dispatch(args: argparse.Namespace) -> int:
    from reverie import stack

    return stack.dispatch(args.name)


def add_project(commands: Commands) -> None:
    project = commands.add_parser("project", help="(Procfile) run the projector: event log -> DuckDB tables")
    project.set_defaults(func=_project)


def _project(args: argparse.Namespace) -> int:
    from reverie import stack

    return stack.project()


def add_worker(commands: Commands) -> None:
    worker = commands.add_parser("worker", help="(Procfile) run an RQ worker for reverie's jobs")
    worker.set_defaults(func=_worker)


def _worker(args: argparse.Namespace) -> int:
    from reverie import stack

    return stack.worker()


def add_scheduler(commands: Commands) -> None:
    scheduler = commands.add_parser(
        "scheduler", help="(Procfile) enqueue memory's scheduled jobs at their intervals (RQ's cron)"
    )
    scheduler.set_defaults(func=_scheduler)


def _scheduler(args: argparse.Namespace) -> int:
    from reverie import stack

    return stack.scheduler()
