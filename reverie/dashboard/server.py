"""`reverie dashboard`: where the dashboard listens, its token, and serving it.

`reverie up` runs it as one of the stack's processes (the Procfile's `dashboard`, unless
`--no-dashboard`): on loopback, on a port the system picks the first time and kept after, with
a token made the first time, both kept in the data directory's `dashboard.json` (0600), so the
URL stays the same across restarts and a bookmark keeps working. `reverie dashboard` on its own
prints that URL and opens it (`--open`) when the stack serves it, and serves it itself, until
Ctrl-C, when not (or with `--port`, or `--serve`).

In containers (docker-compose.yml), REVERIE_DASHBOARD_LISTEN (host:port) has it listen there and
REVERIE_DASHBOARD_TOKEN gives the token (required when the host is not loopback).

The URL carries the token once (see guard.py). It names the project of the folder it is run
in (`?project=`), so the pages open on it; the page's switch shows every project.
"""

import os
import sys
import webbrowser
from urllib.parse import urlencode

import structlog

from reverie import loopback
from reverie.loopback import Endpoint, bound, keep, kept, listens
from schemas.settings import Settings

log = structlog.get_logger("reverie.dashboard")

LISTEN = "REVERIE_DASHBOARD_LISTEN"
TOKEN = "REVERIE_DASHBOARD_TOKEN"


def url(endpoint: Endpoint, project: str | None = None) -> str:
    """The address to open: the token once, and the project the pages open on."""
    query = {"token": endpoint.token, **({"project": project} if project else {})}
    return f"{endpoint.origin}/?{urlencode(query)}"


def running(settings: Settings) -> Endpoint | None:
    """The dashboard the stack serves, if it runs and something listens where it keeps."""
    from workers.supervisor import running_pid

    endpoint = kept(settings.dashboard_file)
    if endpoint is None or not endpoint.port or running_pid(settings) is None:
        return None
    return endpoint if listens(endpoint, timeout=0.5) else None


def dashboard(port: int | None, open_it: bool, serve_here: bool) -> int:
    """`reverie dashboard`: the stack's, if it serves one (and neither `port` nor `serve_here`
    asks otherwise), else served here until SIGINT or SIGTERM."""
    from reverie.console import out
    from reverie.remembering import current_project

    settings = Settings.from_env()
    project = current_project() or None
    served = None if port is not None or serve_here else running(settings)
    if served is not None:
        address = url(served, project)
        out.print(f"the stack serves the dashboard: {address}", soft_wrap=True)
        if open_it:
            webbrowser.open(address)
        return 0
    return serve(settings, port, open_it, project)


def wanted(settings: Settings, port: int | None, environ: dict[str, str]) -> Endpoint:
    """Where to listen and the token to ask for (loopback.wanted): REVERIE_DASHBOARD_LISTEN and
    REVERIE_DASHBOARD_TOKEN, else loopback on `port`, else what the data directory keeps, else new."""
    return loopback.wanted(settings.dashboard_file, environ, LISTEN, TOKEN, port)


def serve(settings: Settings, port: int | None, open_it: bool, project: str | None) -> int:
    """Listen on loopback (`port`, else the kept one, else one the system picks), keep where
    and the token, print the URL, and serve until SIGINT or SIGTERM."""
    from reverie.dashboard.app import build
    from reverie.dashboard.guard import guarded
    from workers.logs import configure_logging

    configure_logging(json=not sys.stderr.isatty())  # logs to stderr: stdout says where it is

    # where it listens is kept for `up`, `status` and the next start, unless it is one of its
    # own (a --port, or beside the stack's, which keeps its own)
    shared = port is None and running(settings) is None
    asked = wanted(settings, port, dict(os.environ))
    try:
        listener, endpoint = bound(asked, movable=port is None and not os.environ.get(LISTEN))
    except OSError as e:
        print(f"reverie: cannot listen on {asked.host}:{asked.port}: {e.strerror}", file=sys.stderr)
        return 1
    try:
        if shared:
            keep(settings.dashboard_file, endpoint)
    except OSError as e:  # a full disk: serve all the same; the URL printed here still works
        log.warning("dashboard.not_kept", error=str(e))
    address = url(endpoint, project)
    print(f"dashboard: {address}", flush=True)
    if open_it:
        webbrowser.open(address)
    loopback.serve_on(listener, guarded(build(settings), endpoint.token, endpoint.port))
    return 0
