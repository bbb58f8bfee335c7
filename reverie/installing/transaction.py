"""Writing what install and uninstall planned, so that uninstall can take it back.

Each file is replaced whole (a reader sees the old bytes or the new), keeping its mode; a new
file is the user's alone (0600), the connection file 0600 in the private data directory.
Before reverie first changes a file, the bytes it held are kept beside it (`*.reverie-backup`),
until the last install recorded in that file is taken back. What was written is recorded by
scope and file (whether the file and its folder existed, the digest of what was written), in
the data directory, after each file: so uninstall can tell whether anybody changed a file since,
and a folder install made is removed once it is empty again.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re

import msgspec

from schemas.disk.files import private_directory, write_durably
from schemas.settings import Settings, connection_line

BACKUP = ".reverie-backup"
_BEARER = re.compile(r'("Bearer )[^"]*')


class InstallError(Exception):
    """What cannot be installed or uninstalled; the message says why."""


class Kept(msgspec.Struct, frozen=True):
    """Claude Code's transcript retention (`cleanupPeriodDays`) as install found it in a file
    (None: unset) and as it set it (retention.py)."""

    before: int | None
    set: int


class Change(msgspec.Struct, frozen=True):
    """One file as it is and as it will be (None: absent). A `secret` one is the connection
    file: written 0600 in the private data directory, and its values never shown. A `private`
    one holds a token in an MCP entry's headers: written 0600 wherever it is. `kept`: the
    retention it raises."""

    path: str
    before: bytes | None
    after: bytes | None
    secret: bool = False
    private: bool = False
    kept: Kept | None = None

    def diff(self) -> str:
        def lines(data: bytes | None) -> list[str]:
            text = "" if data is None else data.decode("utf-8", "replace")
            return [
                _hidden(line) if self.secret else _bearer_hidden(line)
                for line in text.splitlines(keepends=True)
            ]

        return "".join(
            difflib.unified_diff(lines(self.before), lines(self.after), f"{self.path} (now)", self.path)
        )


def _hidden(line: str) -> str:
    """A connection file's line fit to show: what it sets hidden."""
    found = connection_line(line)
    return line if found is None else f"{found[0]}=<hidden>\n"


def _bearer_hidden(line: str) -> str:
    """A settings file's line fit to show: a bearer token in it hidden."""
    return _BEARER.sub(r"\1<hidden>", line)


class Record(msgspec.Struct):
    """What install wrote to one file: whether it and its folder existed, the digest of what
    was written, and the retention it raised there (the first value it found, the last it set)."""

    existed: bool
    written: str
    made_folder: bool = False
    kept: Kept | None = None


def read(path: str) -> bytes | None:
    """The bytes of `path`; None if there is no such file."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def key(scope: str, path: str) -> str:
    """Records are kept by scope and file: user and local scope share ~/.claude.json."""
    return f"{scope} {path}"


def recorded(records: dict[str, Record], path: str) -> bool:
    """Whether any scope's install is recorded in `path`."""
    return any(entry.split(" ", 1)[1] == path for entry in records)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Installs:
    """What install wrote, by file, kept in the data directory for uninstall."""

    def __init__(self, settings: Settings) -> None:
        self.path = os.path.join(settings.home, "installed", "claude-code.json")

    def load(self) -> dict[str, Record]:
        data = read(self.path)
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
        at = key(scope, change.path)
        if change not in made and not (change.secret and at not in records):
            continue
        assert change.after is not None
        record = records.get(at)
        if not recorded(records, change.path) and change.before is not None:
            _write(change.path + BACKUP, change.before)
        existed = record.existed if record is not None else change.before is not None
        made_folder = (
            record.made_folder if record is not None else not os.path.isdir(os.path.dirname(change.path))
        )
        if change in made:
            _put(change)
        records[at] = Record(existed, digest(change.after), made_folder, _kept(record, change.kept))
        installs.save(records)
    return made


def _kept(record: Record | None, raised: Kept | None) -> Kept | None:
    """The retention a file's record keeps: the value before the first raise, the last one set."""
    first = record.kept if record is not None else None
    if raised is None or first is None:
        return raised or first
    return Kept(first.before, raised.set)


def apply_uninstall(scope: str, changes: list[Change], installs: Installs) -> list[Change]:
    """Write the changes (None: remove the file, and its folder if install made it and it is
    empty); forget the scope's records, and each backup no install needs any longer."""
    records = installs.load()
    made = [c for c in changes if c.after != c.before]
    for change in made:
        if change.after is None:
            os.remove(change.path)
            record = records.get(key(scope, change.path))
            folder = os.path.dirname(change.path)
            if record is not None and record.made_folder and not os.listdir(folder):
                os.rmdir(folder)
        else:
            _put(change)
    for change in changes:
        if records.pop(key(scope, change.path), None) is not None:
            installs.save(records)
        if not recorded(records, change.path) and os.path.exists(change.path + BACKUP):
            os.remove(change.path + BACKUP)
    return made


def _put(change: Change) -> None:
    """Write the change's bytes: the connection file 0600 in the private data directory."""
    assert change.after is not None
    if change.secret:
        folder = private_directory(os.path.dirname(change.path), create=True)
        write_durably(folder, os.path.basename(change.path), change.after)
    else:
        _write(change.path, change.after, private=change.private)


def _write(path: str, data: bytes, private: bool = False) -> None:
    """Replace `path` whole (a reader sees the old bytes or the new), keeping its mode; made the
    user's alone (0600) if `private` (it holds a secret)."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    # a new file is the user's alone, as everything reverie makes
    mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) and not private else 0o600
    temporary = f"{path}.reverie-{os.getpid()}"
    with open(temporary, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(temporary, mode)
    os.replace(temporary, path)
