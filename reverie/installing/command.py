"""`reverie install claude-code` and `reverie uninstall claude-code`: plan, then show (--dry-run)
or apply, and say what was done. Nothing is written when a file stops the plan; a file that
needs no change is left alone, and the command says so.

Install also says how much history Claude Code still holds and how long it keeps it; with the
user's consent (--keep-transcripts DAYS, or yes to a question asked on a terminal, never
elsewhere) it keeps it longer (retention.py). Then, unless --no-import, it imports that history
into the running stack in the background (reverie/background_import.py), or says how to once
the stack runs."""

from __future__ import annotations

import os
import shlex
import shutil
import sys

from ingest.envelope import compile_patterns
from reverie.installing import retention
from reverie.installing.connection import Placement, placement
from reverie.installing.entries import ON_PATH
from reverie.installing.plan import (
    files_for,
    plan_install,
    plan_uninstall,
    project_root,
    retention_changed_since,
)
from reverie.installing.transaction import (
    BACKUP,
    Change,
    InstallError,
    Installs,
    apply_install,
    apply_uninstall,
)
from schemas.settings import Settings


def install(scope: str, dry_run: bool, keep_days: int | None = None, import_history: bool = True) -> int:
    """`reverie install claude-code`: `keep_days`, the days Claude Code is to keep transcripts
    (None: ask, on a terminal); `import_history`, import them into the running stack."""
    from reverie.console import err, fail

    home, cwd = os.path.expanduser("~"), os.getcwd()
    try:
        project = project_root(cwd)
    except OSError as e:
        return fail(str(e))
    found = retention.held(home)
    current = retention.period([files_for(s, home, project)[0] for s in ("local", "user")])
    err.print(retention.told(found, current, home), highlight=False, markup=False)
    keep_days = _consented(keep_days, current, home, project, dry_run)
    status = _run(scope, dry_run, installing=True, keep_days=keep_days)
    if status == 0 and not dry_run and import_history and found.transcripts:
        _import_in_background(Settings.from_env(), retention.transcripts_folder(home), found)
    return status


def uninstall(scope: str, dry_run: bool) -> int:
    """`reverie uninstall claude-code`."""
    return _run(scope, dry_run, installing=False)


def _consented(
    keep_days: int | None, current: retention.Period, home: str, project: str, dry_run: bool
) -> int | None:
    """The days to keep transcripts, as the user chose: `keep_days` if given, else their answer
    on a terminal (never asked elsewhere, nor for a dry run); None: leave the setting be."""
    from reverie.console import err

    user_file = files_for("user", home, project)[0]
    if current.managed:
        if keep_days is not None:
            err.print(
                f"{retention.KEY} is managed by your organization ({current.set_in}): "
                f"{user_file} cannot change it, so it is left as it is",
                highlight=False,
                markup=False,
            )
        return None
    if keep_days is not None or dry_run or not sys.stdin.isatty() or current.days >= retention.ASKED_DAYS:
        return keep_days
    asked = (
        f"Keep Claude Code's transcripts for {retention.ASKED_DAYS} days ({retention.KEY} in {user_file}; "
        "uninstall puts it back)? [y/N] "
    )
    err.print(asked, end="", highlight=False, markup=False)
    try:
        answer = input()
    except EOFError:
        answer = ""
    return retention.ASKED_DAYS if answer.strip().lower() in ("y", "yes") else None


def _import_in_background(settings: Settings, folder: str, found: retention.Held) -> None:
    """Import the transcripts under `folder` into the running stack, in a process of its own;
    or say how, once the stack runs."""
    from reverie import background_import
    from reverie.console import err

    if not background_import.reachable(settings):
        err.print(
            f"The stack is not running, so nothing was imported ({retention.transcripts(found.transcripts)} "
            f"to import): start it (reverie up --detach), then run: reverie import {shlex.quote(folder)}",
            highlight=False,
            markup=False,
        )
        return
    pid = background_import.start(settings, folder)
    err.print(
        f"Importing the {found.transcripts} transcripts into reverie in the background (pid {pid}): "
        f"`reverie status` shows how far it got; its log: {background_import.log_path(settings)}",
        highlight=False,
        markup=False,
    )


def _run(scope: str, dry_run: bool, installing: bool, keep_days: int | None = None) -> int:
    from reverie.console import err, fail, out

    settings = Settings.from_env()
    home, cwd = os.path.expanduser("~"), os.getcwd()
    installs = Installs(settings)
    try:
        if installing:
            changes = plan_install(scope, home, cwd, keep_days=keep_days)
        else:
            records = installs.load()
            changes = plan_uninstall(scope, home, cwd, records, settings.connection_file)
            for note in retention_changed_since(scope, records):
                err.print(note, highlight=False, markup=False)
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
    if keep_days is not None:
        err.print(_kept(changes, keep_days), highlight=False, markup=False)
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


def _kept(changes: list[Change], keep_days: int) -> str:
    """What became of the retention asked for."""
    raised = next((c for c in changes if c.kept is not None), None)
    if raised is None or raised.kept is None:
        return (
            f"{retention.KEY} left as it is: it keeps transcripts {keep_days} days or more already, "
            "or holds a value of yours that is not a number of days."
        )
    was = "its default" if raised.kept.before is None else f"{raised.kept.before} days"
    return (
        f"Claude Code now keeps its transcripts {raised.kept.set} days ({retention.KEY} in {raised.path}, "
        f"was {was}); uninstall puts it back."
    )


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
    note = (
        "The project's files are every checkout's: they run `reverie hook` and `reverie mcp` from each "
        "user's PATH (a teammate without reverie there records nothing and is never blocked), and name "
        "no data directory and no secret: each user's hooks read their own REVERIE_HOME (else the "
        "default) and its connection.env, or their environment."
    )
    if shutil.which(ON_PATH) is None:
        note += (
            " Your PATH has no `reverie`, so these hooks do nothing for you: put reverie's folder on "
            f"PATH ({os.path.dirname(sys.executable)}), or install with --scope user or --scope local."
        )
    if placed.private:
        note += f" Yours are in {settings.connection_file}."
    default = Settings.from_env({**os.environ, "REVERIE_HOME": ""}).home
    if settings.home != default:
        note += f" Run Claude Code with REVERIE_HOME={shlex.quote(settings.home)} for them to use yours."
    return note
