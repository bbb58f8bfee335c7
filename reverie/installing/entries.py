"""reverie's entries in Claude Code's settings and MCP configuration, and how they merge into
what is there (the settings merge).

Pure, dicts in and dicts out: one hook entry per Claude Code event (matching every tool for the
events Claude Code matches against a tool name) and one MCP server, `reverie`. Merging keeps
every hook, server and key of anyone else's as it is, and replaces reverie's own (this
version's launcher, or `reverie hook` as earlier versions and the README wrote it): installing
twice never doubles an entry, and taking reverie's entries out leaves no group or event that
only they filled.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping
from typing import Any

import ingest
from schemas.kinds import HOOK_KINDS

SERVER_NAME = "reverie"
# events whose hooks Claude Code matches against a tool name
_TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})
# Claude Code's own bound on a hook (seconds); reverie's watchdog ends it within 5 s anyway
_HOOK_TIMEOUT_S = 10
# What marks a hook command as reverie's: this version's launcher, or `reverie hook` as earlier
# versions and the README wrote it.
_OURS = re.compile(r"ingest[/\\]launcher\.py|\breverie['\"]?\s+hook\b")


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
