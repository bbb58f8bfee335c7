"""`reverie install claude-code` and `reverie uninstall claude-code`: hooks and the MCP server,
written where Claude Code reads them.

Install merges one hook entry per Claude Code event into the scope's settings.json, keeping
every hook and key of the user's, and registers `reverie mcp` as `claude mcp add --scope`
would. It is idempotent: reverie's own entries (this version's, an older one's, or the
`reverie hook` lines the README once had users write) are replaced, never doubled, and never
anyone else's. Before a file is first changed, its bytes are kept beside it
(`settings.json.reverie-backup`); uninstall puts them back byte for byte when nobody changed the
file since, and otherwise takes out reverie's entries alone.

A hook entry runs `PYTHON -S -I .../ingest/launcher.py EVENT || true`: this interpreter
without `site` (see ingest/launcher.py), and `|| true` because Claude Code reads a hook's exit
status 2 as "block": had an upgrade removed the interpreter or the file, the hook would
otherwise stop every prompt. `reverie status` says when an installed hook points at a path
that is gone; installing again rewrites it.

No secret goes into a command (`ps` shows it) or a settings file (often 0644, and the project's
shared through git). What install is given to reach a stack elsewhere is placed by `placement`:
a Redis URL with a password and the recall token go into the data directory's connection file
(schemas/settings.py; 0600, in the 0700 data directory), which every reverie process reads, and
the entries name them empty, so that the file's value applies whatever Claude Code's environment
holds. Only values that are no secret are written inline.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import shlex
import sys
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

import ingest
from ingest.envelope import compile_patterns
from ingest.project import identify
from schemas.files import private_directory, write_durably
from schemas.kinds import HOOK_KINDS
from schemas.settings import CONNECTION_NAMES, Settings, connection_line

SCOPES = ("user", "project", "local")
SERVER_NAME = "reverie"
# events whose hooks Claude Code matches against a tool name
_TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})
# Claude Code's own bound on a hook (seconds); reverie's watchdog ends it within 5 s anyway
_HOOK_TIMEOUT_S = 10
_BACKUP = ".reverie-backup"
# What marks a hook command as reverie's: this version's launcher, or `reverie hook` as earlier
# versions and the README wrote it.
_OURS = re.compile(r"ingest[/\\]launcher\.py|\breverie['\"]?\s+hook\b")
# What install takes of the environment it runs in: where reverie keeps its data, and for a
# stack elsewhere (docker-compose.yml's, published on this host), how to reach it.
FORWARDED = ("REVERIE_HOME", *CONNECTION_NAMES)
_CONNECTION_HEADER = (
    "# How reverie reaches its stack: kept here, this user's alone, by `reverie install claude-code`\n"
    "# (`reverie uninstall claude-code` takes it back). Format: schemas/settings.py.\n"
)


class InstallError(Exception):
    """What cannot be installed or uninstalled; the message says why."""


class Change(msgspec.Struct, frozen=True):
    """One file as it is and as it will be (None: absent). A `secret` one is the connection
    file: written 0600 in the private data directory, and its values never shown."""

    path: str
    before: bytes | None
    after: bytes | None
    secret: bool = False

    def diff(self) -> str:
        def lines(data: bytes | None) -> list[str]:
            text = "" if data is None else data.decode("utf-8", "replace")
            return [_hidden(line) if self.secret else line for line in text.splitlines(keepends=True)]

        return "".join(
            difflib.unified_diff(lines(self.before), lines(self.after), f"{self.path} (now)", self.path)
        )


class Record(msgspec.Struct):
    """What install wrote to one file: whether it and its folder existed, and the digest of
    what was written."""

    existed: bool
    written: str
    made_folder: bool = False


class Placement(msgspec.Struct, frozen=True):
    """Where the values install was given go: `inline` into the entries (name: value, "" for
    one the connection file holds), `private` into the connection file."""

    inline: dict[str, str]
    private: dict[str, str]


def is_secret(name: str, value: str) -> bool:
    """Whether `value` must stay out of commands and settings: the recall token, a Redis URL
    with a password."""
    return name == "REVERIE_RECALL_TOKEN" or (name == "REDIS_URL" and ("@" in value or "password=" in value))


def placement(scope: str, environ: Mapping[str, str]) -> Placement:
    """Where each of FORWARDED set in `environ` goes, for `scope`. Secrets go to the installing
    user's connection file. The user and local scopes' entries carry the rest, and name each
    secret empty: the file's value applies, not one Claude Code's environment may hold for another
    program. The project scope's entries are everyone's: they name no data directory (one user's
    path) and clear nothing, so each user's hooks read their own environment and their own
    `$REVERIE_HOME/connection.env`; only the stack's addresses that are no secret stay inline."""
    given = {name: environ[name] for name in FORWARDED if environ.get(name) is not None}
    private = {name: value for name, value in given.items() if is_secret(name, value)}
    if scope == "project":
        inline = {n: v for n, v in given.items() if v and n != "REVERIE_HOME" and n not in private}
    else:
        inline = {name: "" if name in private else value for name, value in given.items()}
    return Placement(inline, private)


def launcher_command(event: str, inline: Mapping[str, str] | None = None) -> str:
    """The shell command a hook entry runs for `event`, with the variables `inline` set for it."""
    launcher = os.path.join(os.path.dirname(os.path.abspath(ingest.__file__)), "launcher.py")
    assigned = [f"{name}={shlex.quote(value)}" for name, value in (inline or {}).items()]
    python = os.path.abspath(sys.executable)
    return " ".join([*assigned, shlex.quote(python), "-S", "-I", shlex.quote(launcher), event, "|| true"])


def mcp_server(inline: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The MCP server's entry, as `claude mcp add` writes one, with the variables `inline`."""
    return {
        "type": "stdio",
        "command": os.path.abspath(sys.executable),
        "args": ["-m", "reverie", "mcp"],
        "env": dict(inline or {}),
    }


def connection_change(path: str, values: Mapping[str, str]) -> Change:
    """The connection file at `path` with `values` set: each in place of the line that set it
    before, the file's other lines kept as they are."""
    for name, value in values.items():
        if value != value.strip() or "\n" in value or "\r" in value:
            raise InstallError(f"{name} begins or ends with a blank or holds a line break: it cannot be kept")
    before = _read(path)
    lines = _CONNECTION_HEADER.splitlines() if before is None else _text(before).splitlines()
    kept, written = [], set()
    for line in lines:
        name = (connection_line(line) or ("", ""))[0]
        if name in values and name not in written:
            kept.append(f"{name}={values[name]}")
            written.add(name)
        elif name not in values:
            kept.append(line)
    kept += [f"{name}={value}" for name, value in values.items() if name not in written]
    return Change(path, before, ("\n".join(kept) + "\n").encode("utf-8", "surrogateescape"), secret=True)


def without_connection(data: bytes) -> bytes | None:
    """The connection file `data` without what reverie reads in it; None if nothing else is left
    but comments and blank lines."""
    lines = [line for line in _text(data).splitlines() if connection_line(line) is None]
    if not any(line.strip() and not line.lstrip().startswith("#") for line in lines):
        return None
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _hidden(line: str) -> str:
    """A connection file's line fit to show: what it sets hidden."""
    found = connection_line(line)
    return line if found is None else f"{found[0]}=<hidden>\n"


def is_ours(handler: object) -> bool:
    return isinstance(handler, dict) and bool(_OURS.search(str(handler.get("command", ""))))


def without_hooks(settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` with reverie's hook entries taken out (and the groups and events only they filled)."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return settings
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        left = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not any(is_ours(h) for h in handlers):
                left.append(group)
            elif others := [h for h in handlers if not is_ours(h)]:
                left.append({**group, "hooks": others})
        if left or not groups:
            kept[event] = left
    result = {**settings, "hooks": kept}
    if not kept:
        del result["hooks"]
    return result


def with_hooks(settings: dict[str, Any], inline: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`settings` with one reverie hook entry per Claude Code event, the user's kept as they are."""
    result = without_hooks(settings)
    hooks = dict(result.get("hooks") or {})
    for event in HOOK_KINDS:
        group: dict[str, Any] = {"matcher": "*"} if event in _TOOL_EVENTS else {}
        handler = {"type": "command", "command": launcher_command(event, inline), "timeout": _HOOK_TIMEOUT_S}
        existing = hooks.get(event)
        hooks[event] = [*(existing if isinstance(existing, list) else []), {**group, "hooks": [handler]}]
    return {**result, "hooks": hooks}


def _with_server(servers: object, entry: dict[str, Any] | None) -> dict[str, Any]:
    found = dict(servers) if isinstance(servers, dict) else {}
    found.pop(SERVER_NAME, None)
    return found if entry is None else {**found, SERVER_NAME: entry}


def with_mcp(config: dict[str, Any], project: str | None, entry: dict[str, Any] | None) -> dict[str, Any]:
    """`config` (~/.claude.json or a project's .mcp.json) with reverie's server set (or taken
    out, given None): at the top for user and project scope, under the project for local scope."""
    if project is None:
        servers = _with_server(config.get("mcpServers"), entry)
        result = {**config, "mcpServers": servers}
        if not servers and entry is None:
            del result["mcpServers"]
        return result
    projects = dict(config.get("projects") or {})
    mine = dict(projects.get(project) or {})
    mine["mcpServers"] = _with_server(mine.get("mcpServers"), entry)
    projects[project] = mine
    return {**config, "projects": projects}


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


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _parsed(path: str, data: bytes | None) -> dict[str, Any]:
    if data is None or not data.strip():
        return {}
    try:
        value = json.loads(data)
    except ValueError as e:
        raise InstallError(f"{path} is not JSON ({e}): fix it or move it away, then install again") from None
    if not isinstance(value, dict):
        raise InstallError(f"{path} holds {type(value).__name__}, not a JSON object: nothing was changed")
    return value


def _dumped(value: dict[str, Any]) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode()


def _change(path: str, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> Change:
    before = _read(path)
    after = edit(_parsed(path, before))
    return Change(path, before, before if after == _parsed(path, before) else _dumped(after))


def plan_install(scope: str, home: str, cwd: str, environ: Mapping[str, str] | None = None) -> list[Change]:
    """What install does to each file of the scope, and to the connection file if it is given
    secrets (see `placement`)."""
    env = os.environ if environ is None else environ
    placed = placement(scope, env)
    project = project_root(cwd)
    settings_file, mcp_file = files_for(scope, home, project)
    entry = mcp_server(placed.inline)
    changes = [
        _change(settings_file, lambda s: with_hooks(s, placed.inline)),
        _change(mcp_file, lambda c: with_mcp(c, project if scope == "local" else None, entry)),
    ]
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

    changes = []
    for path in (settings_file, mcp_file):
        now = _read(path)
        record = records.pop(_key(scope, path), None)
        alone = not _recorded(records, path)  # else another scope's entries are in the file too
        if record is not None and alone and now is not None and _digest(now) == record.written:
            changes.append(Change(path, now, _read(path + _BACKUP) if record.existed else None))
        else:
            changes.append(_change(path, taken_out))
    if connection_file is not None and (record := records.pop(_key(scope, connection_file), None)):
        changes.append(
            _connection_taken_back(connection_file, record, alone=not _recorded(records, connection_file))
        )
    return changes


def _connection_taken_back(path: str, record: Record, alone: bool) -> Change:
    """The connection file as uninstall leaves it: as it was before install if nobody changed it
    since, else without what reverie reads in it; as it is while another install needs it."""
    now = _read(path)
    if not alone or now is None:
        return Change(path, now, now, secret=True)
    if _digest(now) == record.written:
        return Change(path, now, _read(path + _BACKUP) if record.existed else None, secret=True)
    return Change(path, now, without_connection(now), secret=True)


def _key(scope: str, path: str) -> str:
    """Records are kept by scope and file: user and local scope share ~/.claude.json."""
    return f"{scope} {path}"


def _recorded(records: dict[str, Record], path: str) -> bool:
    return any(key.split(" ", 1)[1] == path for key in records)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Installs:
    """What install wrote, by file, kept in the data directory for uninstall."""

    def __init__(self, settings: Settings) -> None:
        self.path = os.path.join(settings.home, "installed", "claude-code.json")

    def load(self) -> dict[str, Record]:
        data = _read(self.path)
        return msgspec.json.decode(data, type=dict[str, Record]) if data else {}

    def save(self, records: dict[str, Record]) -> None:
        folder = private_directory(os.path.dirname(self.path), create=True)
        write_durably(folder, os.path.basename(self.path), msgspec.json.encode(records))


def apply_install(scope: str, changes: list[Change], installs: Installs) -> list[Change]:
    """Write the changes, each file's first-seen bytes kept beside it; the changes made. The
    connection file is recorded for the scope even when it already held what it needs: so
    uninstalling another scope leaves it."""
    records = installs.load()
    made = [c for c in changes if c.after != c.before]
    for change in changes:
        key = _key(scope, change.path)
        if change not in made and not (change.secret and key not in records):
            continue
        assert change.after is not None
        record = records.get(key)
        if not _recorded(records, change.path) and change.before is not None:
            _write(change.path + _BACKUP, change.before)
        existed = record.existed if record is not None else change.before is not None
        made_folder = (
            record.made_folder if record is not None else not os.path.isdir(os.path.dirname(change.path))
        )
        if change in made:
            _put(change)
        records[key] = Record(existed, _digest(change.after), made_folder)
        installs.save(records)
    return made


def apply_uninstall(scope: str, changes: list[Change], installs: Installs) -> list[Change]:
    records = installs.load()
    made = [c for c in changes if c.after != c.before]
    for change in made:
        if change.after is None:
            os.remove(change.path)
            record = records.get(_key(scope, change.path))
            folder = os.path.dirname(change.path)
            if record is not None and record.made_folder and not os.listdir(folder):
                os.rmdir(folder)
        else:
            _put(change)
    for change in changes:
        if records.pop(_key(scope, change.path), None) is not None:
            installs.save(records)
        if not _recorded(records, change.path) and os.path.exists(change.path + _BACKUP):
            os.remove(change.path + _BACKUP)
    return made


def _put(change: Change) -> None:
    """Write the change's bytes: the connection file 0600 in the private data directory."""
    assert change.after is not None
    if change.secret:
        folder = private_directory(os.path.dirname(change.path), create=True)
        write_durably(folder, os.path.basename(change.path), change.after)
    else:
        _write(change.path, change.after)


def _write(path: str, data: bytes) -> None:
    """Replace `path` whole (a reader sees the old bytes or the new), keeping its mode."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    # a new file is the user's alone, as everything reverie makes
    mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o600
    temporary = f"{path}.reverie-{os.getpid()}"
    with open(temporary, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(temporary, mode)
    os.replace(temporary, path)


def stale_hooks(home: str, cwd: str) -> list[str]:
    """Installed reverie hooks, in any scope, whose interpreter or launcher no longer exists."""
    try:
        project = project_root(cwd)
    except OSError:  # the folder status runs in is gone: the user scope still speaks
        project = cwd
    stale = []
    for scope in SCOPES:
        path = files_for(scope, home, project)[0]
        try:
            hooks = _parsed(path, _read(path)).get("hooks")
        except (InstallError, OSError):
            continue
        for groups in hooks.values() if isinstance(hooks, dict) else []:
            for group in groups if isinstance(groups, list) else []:
                for handler in group.get("hooks", []) if isinstance(group, dict) else []:
                    if is_ours(handler) and _missing(str(handler.get("command", ""))):
                        stale.append(f"{path}: {handler['command']}")
    return stale


def _missing(command: str) -> bool:
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    paths = [w for w in words if os.path.isabs(w)]
    return any(not os.path.exists(p) for p in paths)


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
        kept = f" (as it was: {change.path}{_BACKUP})" if installing and change.before is not None else ""
        err.print(f"{what} {change.path}{kept}", highlight=False, markup=False)
    if not made:
        err.print("nothing to change: " + ("already installed" if installing else "not installed"))
    if installing:
        err.print(
            f"Claude Code now records every event and recalls through reverie ({scope} scope). "
            "Start the stack if it is not running: reverie up --detach",
            highlight=False,
        )
    if installing and scope == "project":
        err.print(_shared_scope_note(settings, placement(scope, os.environ)), highlight=False, markup=False)
    return 0


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
