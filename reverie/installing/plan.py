"""What install and uninstall do to each file of a scope, worked out before anything is written:
so `--dry-run` shows exactly what would be written, and a file that is not a JSON object stops
everything before any file changed.

A scope names two files: user, ~/.claude/settings.json and ~/.claude.json; project, the
project's .claude/settings.json and .mcp.json; local, its .claude/settings.local.json and its
entry in ~/.claude.json. A file whose content would not change is left as it is, byte for byte.
Uninstall puts back a file's bytes from before install when nobody changed it since install
wrote it (nor installed another scope into it); else it takes reverie's entries out alone. The
connection file is left alone while another scope's install (or the plugin's) still needs it.
Install given a retention raises it in ~/.claude/settings.json, whatever the scope
(retention.py); uninstall then puts back the value from before, unless the user changed it since.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from ingest.project import identify
from reverie.installing.connection import connection_change, placement, without_connection
from reverie.installing.entries import (
    launcher_command,
    mcp_http_server,
    mcp_server,
    path_command,
    with_hooks,
    with_mcp,
    without_hooks,
)
from reverie.installing.jsontext import rewritten
from reverie.installing.retention import changed_since, raised, with_retention, without_retention
from reverie.installing.transaction import (
    BACKUP,
    Change,
    InstallError,
    Kept,
    Record,
    digest,
    key,
    read,
    recorded,
)
from schemas.settings import Settings

SCOPES = ("user", "project", "local")


def project_root(cwd: str) -> str:
    """The folder of the project `cwd` is in, as the hooks find it (ingest/project.py): the
    root of its git worktree, else itself."""
    return identify(os.path.realpath(cwd))[1]


def files_for(scope: str, home: str, project: str) -> tuple[str, str]:
    """The settings file and the MCP file of a scope."""
    claude_json = os.path.join(home, ".claude.json")
    if scope == "user":
        return os.path.join(home, ".claude", "settings.json"), claude_json
    if scope == "project":
        return os.path.join(project, ".claude", "settings.json"), os.path.join(project, ".mcp.json")
    return os.path.join(project, ".claude", "settings.local.json"), claude_json


def parsed(path: str, data: bytes | None) -> dict[str, Any]:
    """The JSON object `data` (read from `path`) holds; {} for no file, or an empty one."""
    if data is None or not data.strip():
        return {}
    try:
        value = json.loads(data)
    except ValueError as e:
        raise InstallError(f"{path} is not JSON ({e}): fix it or move it away, then install again") from None
    if not isinstance(value, dict):
        raise InstallError(f"{path} holds {type(value).__name__}, not a JSON object: nothing was changed")
    return value


def _change(
    path: str,
    edit: Callable[[dict[str, Any]], dict[str, Any]],
    private: bool = False,
    keep_days: int | None = None,
) -> Change:
    """`path` edited; `private`: it will hold a secret (then it is written 0600); `keep_days`:
    Claude Code's transcripts kept that many days, at least (retention.py)."""
    before = read(path)
    found = parsed(path, before)
    after = edit(found)
    kept = None
    if keep_days is not None:
        after, kept = with_retention(after, keep_days), raised(found, keep_days)
    written = before if after == found else rewritten(before, found, after)  # the user's formatting kept
    return Change(path, before, written, private=private, kept=kept)


def mcp_entry(
    scope: str, project: str, inline: Mapping[str, str], environ: Mapping[str, str]
) -> tuple[dict[str, Any], bool]:
    """The MCP entry the scope gets, and whether it holds a secret: the running stack's server
    over HTTP (mcp_endpoint.served), its token in the entry's headers, for the user scope (each
    call's project asked of Claude Code) and the local one (the project's root in the URL); else
    `reverie mcp` on stdio. The project scope's file is everyone's, shared through git: no token
    of one user's goes there, nor a path of this machine's, so it always gets the stdio entry
    running the `reverie` each user's PATH finds."""
    from reverie.mcp_endpoint import served

    if scope != "project":
        try:
            found = served(Settings.from_env(environ), dict(environ))
        except ValueError as e:
            raise InstallError(str(e)) from None
        if found is not None:
            return mcp_http_server(found.url, found.token, project if scope == "local" else None), True
    return mcp_server(inline, on_path=scope == "project"), False


def plan_install(
    scope: str,
    home: str,
    cwd: str,
    environ: Mapping[str, str] | None = None,
    keep_days: int | None = None,
) -> list[Change]:
    """What install does to each file of the scope, and to the connection file if it is given
    secrets (see `placement`); given `keep_days`, to the user's settings, which then keep
    Claude Code's transcripts that many days at least (retention.py), whatever the scope."""
    env = os.environ if environ is None else environ
    placed = placement(scope, env)
    project = project_root(cwd)
    settings_file, mcp_file = files_for(scope, home, project)
    user_file = files_for("user", home, project)[0]
    entry, private = mcp_entry(scope, project, placed.inline, env)
    hooked = keep_days if settings_file == user_file else None
    command = path_command if scope == "project" else launcher_command  # the project's: every checkout's
    changes = [
        _change(settings_file, lambda s: with_hooks(s, placed.inline, command), keep_days=hooked),
        _change(mcp_file, lambda c: with_mcp(c, project if scope == "local" else None, entry), private),
    ]
    if keep_days is not None and hooked is None:
        changes.append(_change(user_file, lambda s: s, keep_days=keep_days))
    if placed.private:
        changes.append(connection_change(Settings.from_env(env).connection_file, placed.private))
    return changes


def plan_uninstall(
    scope: str, home: str, cwd: str, records: dict[str, Record], connection_file: str | None = None
) -> list[Change]:
    """What uninstall does to each file of the scope: its bytes from before install, if nobody
    changed it since install wrote it (nor installed another scope into it); else the same file
    without reverie's entries. The connection file is left alone while another scope's install
    (or the plugin's) still needs it."""
    records = dict(records)
    project = project_root(cwd)
    settings_file, mcp_file = files_for(scope, home, project)

    def taken_out(settings: dict[str, Any]) -> dict[str, Any]:
        config = with_mcp(without_hooks(settings), project if scope == "local" else None, None)
        if scope == "local" and not config["projects"][project]["mcpServers"]:
            del config["projects"][project]["mcpServers"]
            if not config["projects"][project]:
                del config["projects"][project]
            if not config["projects"]:
                del config["projects"]
        return config

    def as_it_was(settings: dict[str, Any]) -> dict[str, Any]:
        return settings

    user_file = files_for("user", home, project)[0]
    files: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = [
        (settings_file, taken_out),
        (mcp_file, taken_out),
    ]
    if user_file not in (settings_file, mcp_file) and key(scope, user_file) in records:
        files.append((user_file, as_it_was))  # it holds the retention alone
    changes = []
    for path, take_out in files:
        now = read(path)
        record = records.pop(key(scope, path), None)
        alone = not recorded(records, path)  # else another scope's entries are in the file too
        if record is not None and alone and now is not None and digest(now) == record.written:
            changes.append(Change(path, now, read(path + BACKUP) if record.existed else None))
        else:
            kept = record.kept if record is not None else None
            changes.append(_change(path, partial(_without, take_out, kept)))
    if connection_file is not None and (record := records.pop(key(scope, connection_file), None)):
        changes.append(
            _connection_taken_back(connection_file, record, alone=not recorded(records, connection_file))
        )
    return changes


def _without(
    take_out: Callable[[dict[str, Any]], dict[str, Any]], kept: Kept | None, settings: dict[str, Any]
) -> dict[str, Any]:
    return without_retention(take_out(settings), kept)


def retention_changed_since(scope: str, records: dict[str, Record]) -> list[str]:
    """What to say of each file where install raised the retention and the user changed it since
    (uninstall leaves their value)."""
    notes = []
    for at, record in records.items():
        path = at.split(" ", 1)[1]
        if at == key(scope, path) and record.kept is not None:
            try:
                note = changed_since(path, parsed(path, read(path)), record.kept)
            except (InstallError, OSError):
                continue
            notes += [note] if note else []
    return notes


def _connection_taken_back(path: str, record: Record, alone: bool) -> Change:
    """The connection file as uninstall leaves it: as it was before install if nobody changed it
    since, else without what reverie reads in it; as it is while another install needs it."""
    now = read(path)
    if not alone or now is None:
        return Change(path, now, now, secret=True)
    if digest(now) == record.written:
        return Change(path, now, read(path + BACKUP) if record.existed else None, secret=True)
    return Change(path, now, without_connection(now), secret=True)
