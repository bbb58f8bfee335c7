"""A project's identity: its root's real path, stable across a session however often the agent
changes directory.

The root is, in order: CLAUDE_PROJECT_DIR; the folder of the session's transcript, read back to
the real path it names (the ancestor of the payload's cwd whose key it is); the git root above
the cwd; the cwd itself. Two projects are one only if they are one folder.

Claude Code's own name for a project, its `project_key` (the root path with every character
other than a letter or a digit turned into '-', the name of its folder under
~/.claude/projects), is for display and for finding transcripts only: it is not one-to-one
(`proj.x` and `proj-x` share one). When a key cannot be read back to a path (a transcript's
folder with no cwd inside it), the key stands in, as it did for everything recorded before
(the projections read those keys back to paths where the event's cwd allows:
`project_root` in projections/folds/base.py).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

UNKNOWN_PROJECT = "unknown"
_SEPARATORS = "/\\"


def project_key(root: str) -> str:
    """Claude Code's folder name for a project rooted at `root` (POSIX or Windows path)."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in _root(root))


def _root(path: str) -> str:
    """`path` without trailing separators (but "/" stays)."""
    return path.rstrip("/\\") or path


def root_of_key(key: str, cwd: str) -> str | None:
    """The folder whose key is `key`: `cwd` or one of its ancestors (None if neither is)."""
    cwd = _root(cwd)
    ends = [i for i, c in enumerate(cwd) if c in _SEPARATORS] + [len(cwd)]
    for end in reversed(ends):
        if end and project_key(cwd[:end]) == key:
            return cwd[:end]
    return None


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
    """The project folder (Claude Code's key) of a transcript under .../projects/<key>/<session>.jsonl."""
    parts = [part for part in transcript_path.replace("\\", "/").split("/") if part]
    for i in range(len(parts) - 2, 0, -1):
        if parts[i - 1] == "projects":
            return parts[i]
    return None


def project_of(payload: Mapping[str, object], environ: Mapping[str, str]) -> str:
    """The project (its root's path) of a hook payload received in the environment `environ`."""
    root = environ.get("CLAUDE_PROJECT_DIR")
    if root:
        return _root(root)
    transcript = payload.get("transcript_path")
    cwd = payload.get("cwd")
    cwd = cwd if isinstance(cwd, str) and cwd else None
    key = transcript_project(transcript) if isinstance(transcript, str) else None
    if key:
        return (root_of_key(key, cwd) if cwd else None) or key
    if cwd:
        return _root((_git_root(cwd) if os.path.isdir(cwd) else None) or cwd)
    return UNKNOWN_PROJECT
