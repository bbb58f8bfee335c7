"""Installed hooks that cannot run, in any scope (`reverie status` names them).

An upgrade or a moved virtualenv can remove the interpreter or the launcher a hook entry names;
the entry's `|| true` keeps Claude Code going, but nothing is recorded. A hook is stale when an
absolute path in its command does not exist, or when it runs `reverie` from PATH (the project
scope's) and PATH has none; files that cannot be read or parsed are passed over, and a working
folder that is gone still lets the user scope speak.
"""

from __future__ import annotations

import os
import shlex
import shutil

from reverie.installing.entries import ON_PATH, is_ours
from reverie.installing.plan import SCOPES, files_for, parsed, project_root
from reverie.installing.transaction import InstallError, read


def stale_hooks(home: str, cwd: str) -> list[str]:
    """Installed reverie hooks, in any scope, whose interpreter or launcher no longer exists, or
    that run a `reverie` PATH does not find."""
    try:
        project = project_root(cwd)
    except OSError:  # the folder status runs in is gone: the user scope still speaks
        project = cwd
    stale = []
    for scope in SCOPES:
        path = files_for(scope, home, project)[0]
        try:
            hooks = parsed(path, read(path)).get("hooks")
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
    on_path = ON_PATH in words and shutil.which(ON_PATH) is None
    return on_path or any(not os.path.exists(p) for p in paths)
