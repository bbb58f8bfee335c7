"""reverie as a Claude Code plugin, from a marketplace that needs nothing but the installed package.

`reverie claude-code marketplace` writes a marketplace (`.claude-plugin/marketplace.json`) in the
data directory and prints its folder, for `claude plugin marketplace add FOLDER` then
`claude plugin install reverie@reverie`. Its one plugin has a `command` source (Claude Code
2.1.229+): `reverie claude-code plugin`, run by this very interpreter, which writes the plugin
folder and prints it. Claude Code runs that command again on install, on update and once per
session, so the plugin always points at the reverie installed now: an upgrade that moves it
leaves no hook behind pointing at a path that is gone.

The plugin holds what `reverie install claude-code` writes (a hook entry per event, the MCP
server), and the slash commands `/reverie:remember`, `/reverie:recall`, `/reverie:stash` and
`/reverie:curate` shipped in reverie/plugin/commands. As install does, the marketplace keeps
the secrets it is given in the data directory's connection file, never in a command
(reverie/installing/connection.py: `placement`); the file is recorded for the plugin, so
uninstalling a scope leaves it.
"""

import hashlib
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from typing import Any

from ingest.envelope import compile_patterns
from reverie.installing.connection import connection_change, placement
from reverie.installing.entries import mcp_server, with_hooks
from reverie.installing.transaction import Installs, apply_install
from schemas.disk.files import private_directory
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
    """The plugin folder for the reverie installed now; its path.

    Claude Code runs this at each session's start, so two sessions may run it at once, while a
    third copies the folder: a folder is never changed once its path is printed. Each content
    has its own folder, named by its digest, built under a temporary name and renamed into place
    whole (a rename onto a folder that exists fails: the same content is there already). Other
    contents' folders, and what a killed run left, go once they are an hour old."""
    parent = os.path.join(settings.home, "claude-code", "plugins")
    private_directory(parent, create=True)
    files = _plugin_files()
    digest = _digest(files)
    folder = os.path.join(parent, digest)
    if not os.path.isdir(folder):
        building = tempfile.mkdtemp(prefix=".building-", dir=parent)
        for name, value in files.items():
            _write_json(os.path.join(building, name), value)
        shutil.copytree(_COMMANDS, os.path.join(building, "commands"))
        try:
            os.rename(building, folder)
        except OSError:  # another run put the same folder in place first
            shutil.rmtree(building, ignore_errors=True)
    _remove_old(parent, keep=digest)
    return folder


def _plugin_files() -> dict[str, dict[str, Any]]:
    inline = placement("user", os.environ).inline
    hooks = with_hooks({}, inline)["hooks"]
    return {
        ".claude-plugin/plugin.json": {
            "name": NAME,
            "version": _version(),
            "description": _DESCRIPTION,
            "author": {"name": "reverie"},
        },
        "hooks/hooks.json": {"description": _DESCRIPTION, "hooks": hooks},
        ".mcp.json": {"mcpServers": {NAME: mcp_server(inline)}},
    }


def _digest(files: dict[str, dict[str, Any]]) -> str:
    """What names a content: its files and the slash commands copied beside them."""
    content = hashlib.sha256(json.dumps(files, sort_keys=True).encode())
    for name in sorted(os.listdir(_COMMANDS)):
        with open(os.path.join(_COMMANDS, name), "rb") as f:
            content.update(name.encode() + b"\0" + f.read())
    return content.hexdigest()[:16]


_OLD_AFTER_S = 3600.0


def _remove_old(parent: str, keep: str) -> None:
    old = time.time() - _OLD_AFTER_S
    for entry in os.scandir(parent):
        try:
            if entry.name != keep and entry.stat(follow_symlinks=False).st_mtime < old:
                shutil.rmtree(entry.path, ignore_errors=True)
        except FileNotFoundError:  # another run removed it first
            continue


def write_marketplace(settings: Settings) -> str:
    """The marketplace folder, its plugin's source the command that writes the plugin; its path."""
    folder = os.path.join(settings.home, "claude-code", "marketplace")
    private_directory(os.path.dirname(folder), create=True)
    placed = placement("user", os.environ)
    if placed.private:
        change = connection_change(settings.connection_file, placed.private)
        apply_install("plugin", [change], Installs(settings))
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
    compile_patterns()  # for its hooks, as `reverie install` does (nothing, once done)
    sys.stdout.write(write_plugin(Settings.from_env()) + "\n")
    return 0


def marketplace_command() -> int:
    """`reverie claude-code marketplace`: write the marketplace folder and print its path."""
    sys.stdout.write(write_marketplace(Settings.from_env()) + "\n")
    return 0
