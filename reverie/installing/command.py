"""`reverie install claude-code` and `reverie uninstall claude-code`: plan, then show (--dry-run)
or apply, and say what was done. Nothing is written when a file stops the plan; a file that
needs no change is left alone, and the command says so."""

from __future__ import annotations

import os
import shlex

from ingest.envelope import compile_patterns
from reverie.installing.connection import Placement, placement
from reverie.installing.plan import plan_install, plan_uninstall
from reverie.installing.transaction import BACKUP, InstallError, Installs, apply_install, apply_uninstall
from schemas.settings import Settings


def install(scope: str, dry_run: bool) -> int:
    """`reverie install claude-code`."""
    return _run(scope, dry_run, installing=True)


def uninstall(scope: str, dry_run: bool) -> int:
    """`reverie uninstall claude-code`."""
    return _run(scope, dry_run, installing=False)


def _run(scope: str, dry_run: bool, installing: bool) -> int:
    from reverie.console import err, fail, out

    settings = Settings.from_env()
    home, cwd = os.path.expanduser("~"), os.getcwd()
    installs = Installs(settings)
    try:
        if installing:
            changes = plan_install(scope, home, cwd)
        else:
            changes = plan_uninstall(scope, home, cwd, installs.load(), settings.connection_file)
        if dry_run:
            diffs = [c.diff() for c in changes if c.after != c.before]
            out.print("".join(diffs) or "nothing to change", highlight=False, markup=False)
            return 0
        made = (apply_install if installing else apply_uninstall)(scope, changes, installs)
    except (InstallError, OSError) as e:
        return fail(str(e))
    if installing:
        compile_patterns()  # once for every hook: none then imports `re` (ingest/patterns.py)
    for change in made:
        what = "removed" if change.after is None else "wrote"
        kept = f" (as it was: {change.path}{BACKUP})" if installing and change.before is not None else ""
        err.print(f"{what} {change.path}{kept}", highlight=False, markup=False)
    if not made:
        err.print("nothing to change: " + ("already installed" if installing else "not installed"))
    if installing:
        err.print(
            f"Claude Code now records every event and recalls through reverie ({scope} scope). "
            + _mcp_note(scope, over_http=any(c.private for c in changes)),
            highlight=False,
            markup=False,
        )
    if installing and scope == "project":
        err.print(_shared_scope_note(settings, placement(scope, os.environ)), highlight=False, markup=False)
    return 0


def _mcp_note(scope: str, over_http: bool) -> str:
    """Which MCP server Claude Code was given, and what to do about it."""
    if over_http:
        return (
            "Its MCP tools are the running stack's, over HTTP: keep the stack up (reverie up --detach), "
            "and install again if its port ever changes."
        )
    why = "the project scope is shared" if scope == "project" else "no stack was running"
    return (
        f"Its MCP tools start with each session (`reverie mcp`, stdio: {why}). "
        "Start the stack if it is not running: reverie up --detach"
        + (
            "; then install again to use its MCP server, with no start to wait for."
            if scope != "project"
            else "."
        )
    )


def _shared_scope_note(settings: Settings, placed: Placement) -> str:
    """What the project scope leaves to each user, since its files are everyone's."""
    note = "The project's files name no data directory and hold no secret: each user's hooks read "
    note += "their own REVERIE_HOME (else the default) and its connection.env, or their environment."
    if placed.private:
        note += f" Yours are in {settings.connection_file}."
    default = Settings.from_env({**os.environ, "REVERIE_HOME": ""}).home
    if settings.home != default:
        note += f" Run Claude Code with REVERIE_HOME={shlex.quote(settings.home)} for them to use yours."
    return note
