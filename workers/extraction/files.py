"""The files a session's tools read and changed, as `file` entities of their project, each
named by its path relative to the root of the worktree it was used in: the same file in two
worktrees (or two clones) of one repository is one entity."""

import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import msgspec

from ingest.project import ROOT_FIELD
from schemas.events import Event
from schemas.memory import EntityObserved
from workers.evidence.tool_uses import tool_uses

_PATH_FIELDS = ("file_path", "notebook_path", "path")
_SEARCHES = {"Glob", "Grep", "LS"}  # their `path` is a folder to search, not a file
# what a project builds or vendors, not its own files
_NOT_ITS_OWN = re.compile(
    r"(?:^|/)(?:_build|node_modules|deps|\.venv|venv|dist|target|__pycache__|\.git)(?:/|$)"
)


class Mention(msgspec.Struct, frozen=True):
    """A file an event names, within its project."""

    project: str
    path: str  # relative to its worktree's root when inside it, else as the tool gave it
    event_id: str


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\s_-]+")
_ARTICLES = frozenset({"the", "a", "an", "le", "la", "les", "l'", "un", "une"})


def canonical_name(name: str) -> str:
    """One spelling for the names of one thing: "AuthProvider", "the auth provider",
    "auth_provider" and "auth-provider" are all "auth provider". (A file is named by its path,
    never by this: auth_provider.py stays a file.)"""
    words = _SEPARATORS.split(_CAMEL.sub(" ", name.strip()).lower())
    return " ".join(w for w in words if w and w not in _ARTICLES)


def entity_id(entity_type: str, normalized_name: str, project: str = "") -> str:
    """The id of an entity: the same thing, named the same way, in the same project is one."""
    digest = hashlib.blake2b(f"{project}\0{normalized_name}".encode(), digest_size=10).hexdigest()
    return f"{entity_type}:{digest}"


def root_of(event: Event, payload: Mapping[str, Any] | None = None) -> str | None:
    """The root of the worktree `event` happened in, as the hook or the import recorded it in
    its payload (ingest/project.py), else its project when that is a path (events recorded
    before projects were repositories): None if neither says. Read from the event alone, never
    from the disk: extraction runs on any worker."""
    if payload is None:
        decoded = msgspec.json.decode(event.payload)
        payload = decoded if isinstance(decoded, dict) else {}
    root = payload.get(ROOT_FIELD)
    if isinstance(root, str) and os.path.isabs(root):
        return root
    return event.project if os.path.isabs(event.project) else None


def relative(path: str, root: str | None) -> str:
    """`path` relative to `root` when inside it, else normalized as it is."""
    if root is not None and os.path.isabs(path):
        inside = os.path.relpath(os.path.normpath(path), root)
        if not inside.startswith(os.pardir):
            return inside
    return os.path.normpath(path)


def mentions(events: Iterable[Event]) -> Iterator[Mention]:
    """Every file of its project the tool uses among `events` name (the input's path fields)."""
    for use in tool_uses(events):
        fields = _PATH_FIELDS[:2] if use.name in _SEARCHES else _PATH_FIELDS
        for path in (use.given.get(field) for field in fields):
            if isinstance(path, str) and path.strip() not in ("", "."):
                named = relative(path.strip(), root_of(use.event, use.payload))
                if not _NOT_ITS_OWN.search(named):
                    yield Mention(use.event.project, named, use.event.id)


def file_entities(events: Iterable[Event]) -> Iterator[tuple[EntityObserved, str, list[str]]]:
    """Each file each of `events` names, once per event: the entity, its project, and the event
    naming it. One observation per event, never one per batch, so that the same events give the
    same observations however the log was cut into batches."""
    named = {(m.project, m.path, m.event_id) for m in mentions(events)}
    for project, path, event_id in sorted(named):
        entity = EntityObserved(
            entity_id=entity_id("file", path, project),
            type="file",
            name=path,
            normalized_name=path,
            properties={"project": project},
        )
        yield entity, project, [event_id]
