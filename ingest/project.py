"""A project's identity: stable across a session however often the agent changes directory.

The key is Claude Code's own name for a project: its root path with every character other
than a letter or a digit turned into '-' (the name of its folder under ~/.claude/projects).
So a hook payload, a transcript and a shared Redis from several machines agree on it. The
root is, in order: CLAUDE_PROJECT_DIR, the folder of the session's transcript, the git root
above the payload's cwd, the cwd itself.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")
UNKNOWN_PROJECT = "unknown"


def project_key(root: str) -> str:
    """Claude Code's folder name for a project rooted at `root` (POSIX or Windows path)."""
    return _NOT_ALNUM.sub("-", root.rstrip("/\\") or root)


def _git_root(cwd: str) -> str | None:
    path = os.path.abspath(cwd)
    while True:
        if os.path.exists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def transcript_project(transcript_path: str) -> str | None:
    """The project folder of a transcript under .../projects/<key>/<session>.jsonl."""
    parts = re.split(r"[\\/]+", transcript_path)
    for i in range(len(parts) - 2, 0, -1):
        if parts[i - 1] == "projects" and parts[i]:
            return parts[i]
    return None


def project_of(payload: Mapping[str, object], environ: Mapping[str, str]) -> str:
    """The project key for a hook payload received in the environment `environ`."""
    root = environ.get("CLAUDE_PROJECT_DIR")
    if root:
        return project_key(root)
    transcript = payload.get("transcript_path")
    if isinstance(transcript, str) and (key := transcript_project(transcript)):
        return key
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd:
        return project_key((_git_root(cwd) if os.path.isdir(cwd) else None) or cwd)
    return UNKNOWN_PROJECT
