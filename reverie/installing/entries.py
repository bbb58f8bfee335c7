"""reverie's entries in Claude Code's settings and MCP configuration, and how they merge into
what is there (the settings merge).

Pure, dicts in and dicts out: one hook entry per Claude Code event (matching every tool for the
events Claude Code matches against a tool name) and one MCP server, `reverie`: the running
stack's over HTTP, or `reverie mcp` on stdio. Merging keeps
every hook, server and key of anyone else's as it is, and replaces reverie's own: installing
twice never doubles an entry, and taking reverie's entries out leaves no group or event that
only they filled. reverie's own are the commands it writes, read back word for word (any
version's, whatever its interpreter, folder, event and values, and the project scope's `reverie
hook EVENT || true`), and `reverie hook [EVENT]` alone, as the README once had users write it; a
command that only mentions either (a user's wrapper around the launcher, say) is the user's.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import ingest
from reverie.installing.connection import FORWARDED
from schemas.kinds import HOOK_KINDS

SERVER_NAME = "reverie"
ON_PATH = "reverie"  # the project scope's commands: the console script, wherever PATH finds it
# events whose hooks Claude Code matches against a tool name
_TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})
# Claude Code's own bound on a hook (seconds); reverie's watchdog ends it within 5 s anyway
_HOOK_TIMEOUT_S = 10
# The events reverie hooks: all but PreToolUse, which Claude Code waits for before every tool
# call (a hook is 15 to 20 ms) and which says nothing PostToolUse and PostToolUseFailure do not:
# the call, and (its only use) when it began, now that they carry its `duration_ms`. The hook
# still records a PreToolUse it is given.
HOOKED = tuple(event for event in HOOK_KINDS if event != "PreToolUse")


def launcher_command(event: str, inline: Mapping[str, str] | None = None) -> str:
    """The shell command a hook entry runs for `event`, with the variables `inline` set for it:
    this interpreter and this launcher, by their paths (the user and local scopes')."""
    launcher = os.path.join(os.path.dirname(os.path.abspath(ingest.__file__)), "launcher.py")
    return _command(os.path.abspath(sys.executable), launcher, event, inline or {})


def _command(python: str, launcher: str, event: str, inline: Mapping[str, str]) -> str:
    words = [shlex.quote(python), "-S", "-I", shlex.quote(launcher), event, "|| true"]
    return " ".join([*_assigned(inline), *words])


def path_command(event: str, inline: Mapping[str, str] | None = None) -> str:
    """The hook command of the project scope, whose settings every checkout shares: `reverie
    hook EVENT`, whichever reverie the shell finds on PATH (none: `|| true`, and nothing is
    blocked), with the variables `inline` set for it."""
    return " ".join([*_assigned(inline or {}), ON_PATH, "hook", event, "|| true"])


def _assigned(inline: Mapping[str, str]) -> list[str]:
    return [f"{name}={shlex.quote(value)}" for name, value in inline.items()]


def mcp_server(inline: Mapping[str, str] | None = None, on_path: bool = False) -> dict[str, Any]:
    """The stdio MCP server's entry, as `claude mcp add` writes one, with the variables `inline`:
    this interpreter by its path, or (`on_path`, the project scope's) `reverie` found on PATH."""
    if on_path:
        return {"type": "stdio", "command": ON_PATH, "args": ["mcp"], "env": dict(inline or {})}
    python = os.path.abspath(sys.executable)
    return {"type": "stdio", "command": python, "args": ["-m", "reverie", "mcp"], "env": dict(inline or {})}


def mcp_http_server(url: str, token: str, root: str | None = None) -> dict[str, Any]:
    """The entry of a running stack's MCP server, as `claude mcp add --transport http` writes one:
    its URL, with `?root=ROOT` when the entry is one project's (the local scope's: every call
    answers for that folder's project; else each asks the client's roots), and the token. The
    root is percent-encoded, `$` included: Claude Code expands `${VAR}` in a URL."""
    if root is not None:
        url += "?root=" + quote(root, safe="/")
    return {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}


def is_ours(handler: object) -> bool:
    """Whether `handler` is a hook entry of reverie's: a command `launcher_command` writes, or
    `reverie hook [EVENT]` alone (see the module's docstring)."""
    command = handler.get("command") if isinstance(handler, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:  # an unclosed quote: nothing reverie writes
        return False
    return _is_launcher_command(command, words) or _is_hook_command(command, words)


def _is_launcher_command(command: str, words: list[str]) -> bool:
    """Whether `command` (split into `words`) is exactly what `launcher_command` writes for some
    interpreter, launcher, event and values: it is written again from its parts and compared."""
    if len(words) < 7 or words[-2:] != ["||", "true"]:
        return False
    *assigned, python, no_site, isolated, launcher, event = words[:-2]
    inline = {name: value for name, _, value in (word.partition("=") for word in assigned)}
    return (
        (no_site, isolated) == ("-S", "-I")
        and os.path.isabs(python)
        and os.path.isabs(launcher)
        and os.path.basename(launcher) == "launcher.py"
        and os.path.basename(os.path.dirname(launcher)) == "ingest"
        and event.isalpha()
        and all(name in FORWARDED for name in inline)
        and _command(python, launcher, event, inline) == command
    )


def _is_hook_command(command: str, words: list[str]) -> bool:
    """Whether `command` (split into `words`) is what `path_command` writes for some event and
    values, or `[PATH/]reverie hook [EVENT]` alone, as earlier versions' README had users write."""
    if words[-2:] == ["||", "true"] and len(words) >= 5:
        *assigned, program, hook, event = words[:-2]
        inline = {name: value for name, _, value in (word.partition("=") for word in assigned)}
        return (
            (program, hook) == (ON_PATH, "hook")
            and event.isalpha()
            and all(name in FORWARDED for name in inline)
            and path_command(event, inline) == command
        )
    if len(words) not in (2, 3) or words[1] != "hook" or os.path.basename(words[0]) != "reverie":
        return False
    return len(words) == 2 or words[2].isalpha()


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


def with_hooks(
    settings: dict[str, Any],
    inline: Mapping[str, str] | None = None,
    command: Callable[[str, Mapping[str, str] | None], str] = launcher_command,
) -> dict[str, Any]:
    """`settings` with one reverie hook entry per event it hooks (HOOKED), each running what
    `command` writes for it, the user's kept as they are."""
    result = without_hooks(settings)
    hooks = dict(result.get("hooks") or {})
    for event in HOOKED:
        group: dict[str, Any] = {"matcher": "*"} if event in _TOOL_EVENTS else {}
        handler = {"type": "command", "command": command(event, inline), "timeout": _HOOK_TIMEOUT_S}
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
