"""reverie as a Claude Code plugin, from a marketplace that needs nothing but the installed package.

`reverie claude-code marketplace` writes a marketplace (`.claude-plugin/marketplace.json`) in the
data directory and prints its folder, for `claude plugin marketplace add FOLDER` then
`claude plugin install reverie@reverie`. Its one plugin has a `command` source (Claude Code
2.1.229+): `reverie claude-code plugin`, run by this very interpreter, which writes the plugin
folder and prints it. Claude Code runs that command again on install, on update and once per
session, so the plugin always points at the reverie installed now: an upgrade that moves it
leaves no hook behind pointing at a path that is gone.

The plugin holds what `reverie install claude-code` writes (a hook entry per event, the MCP
server), and the slash commands `/reverie:remember` and `/reverie:recall` shipped in
reverie/plugin/commands. As install does, the marketplace keeps the secrets it is given in the
data directory's connection file, never in a command (reverie/installing.py: `placement`); the
file is recorded for the plugin, so uninstalling a scope leaves it.
"""

import json
import os
import shlex
import shutil
import sys
from typing import Any

from reverie import installing
from schemas.files import private_directory
from schemas.settings import Settings

NAME = "reverie"
_COMMANDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugin", "commands")
_DESCRIPTION = "Long-term memory for Claude Code: every session recorded, the memories that matter recalled."


def _version() -> str:
    from importlib.metadata import version

    return version("reverie")


def _write_json(path: str, value: dict[str, Any]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(value, f, indent=2)
        f.write("\n")


def write_plugin(settings: Settings) -> str:
    """The plugin folder, written anew for the reverie installed now; its path."""
    folder = os.path.join(settings.home, "claude-code", "plugin")
    private_directory(os.path.dirname(folder), create=True)
    shutil.rmtree(folder, ignore_errors=True)
    _write_json(
        os.path.join(folder, ".claude-plugin", "plugin.json"),
        {"name": NAME, "version": _version(), "description": _DESCRIPTION, "author": {"name": "reverie"}},
    )
    inline = installing.placement("user", os.environ).inline
    hooks = installing.with_hooks({}, inline)["hooks"]
    _write_json(os.path.join(folder, "hooks", "hooks.json"), {"description": _DESCRIPTION, "hooks": hooks})
    _write_json(os.path.join(folder, ".mcp.json"), {"mcpServers": {NAME: installing.mcp_server(inline)}})
    shutil.copytree(_COMMANDS, os.path.join(folder, "commands"))
    return folder


def write_marketplace(settings: Settings) -> str:
    """The marketplace folder, its plugin's source the command that writes the plugin; its path."""
    folder = os.path.join(settings.home, "claude-code", "marketplace")
    private_directory(os.path.dirname(folder), create=True)
    placed = installing.placement("user", os.environ)
    if placed.private:
        change = installing.connection_change(settings.connection_file, placed.private)
        installing.apply_install("plugin", [change], installing.Installs(settings))
    forwarded = " ".join(f"{name}={shlex.quote(value)}" for name, value in placed.inline.items())
    command = " ".join(
        filter(
            None, [forwarded, shlex.quote(os.path.abspath(sys.executable)), "-m reverie claude-code plugin"]
        )
    )
    plugin = {"name": NAME, "description": _DESCRIPTION, "source": {"source": "command", "command": command}}
    _write_json(
        os.path.join(folder, ".claude-plugin", "marketplace.json"),
        {
            "name": NAME,
            "owner": {"name": "reverie"},
            "metadata": {"description": _DESCRIPTION},
            "plugins": [plugin],
        },
    )
    return folder


def plugin_command() -> int:
    """`reverie claude-code plugin`: write the plugin folder and print its path (one line)."""
    sys.stdout.write(write_plugin(Settings.from_env()) + "\n")
    return 0


def marketplace_command() -> int:
    """`reverie claude-code marketplace`: write the marketplace folder and print its path."""
    sys.stdout.write(write_marketplace(Settings.from_env()) + "\n")
    return 0
