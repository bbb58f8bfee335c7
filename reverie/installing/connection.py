"""Where the values install is given go, secrets apart.

No secret goes into a command (`ps` shows it) or a settings file (often 0644, and the project's
shared through git). Of what install takes from its environment (FORWARDED), a Redis URL with a
password and the recall token go into the data directory's connection file (schemas/settings.py;
0600, in the 0700 data directory), which every reverie process reads, and the entries name them
empty, so that the file's value applies whatever Claude Code's environment holds. Only values
that are no secret are written inline. The connection file keeps every line of anyone else's;
taking reverie's values back out leaves nothing when nothing else was there.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from reverie.installing.transaction import Change, InstallError, read
from schemas.settings import CONNECTION_NAMES, connection_line

# What install takes of the environment it runs in: where reverie keeps its data, and for a
# stack elsewhere (docker-compose.yml's, published on this host), how to reach it.
FORWARDED = ("REVERIE_HOME", *CONNECTION_NAMES)
_CONNECTION_HEADER = (
    "# How reverie reaches its stack: kept here, this user's alone, by `reverie install claude-code`\n"
    "# (`reverie uninstall claude-code` takes it back). Format: schemas/settings.py.\n"
)


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


def connection_change(path: str, values: Mapping[str, str]) -> Change:
    """The connection file at `path` with `values` set: each in place of the line that set it
    before, the file's other lines kept as they are."""
    for name, value in values.items():
        if value != value.strip() or "\n" in value or "\r" in value:
            raise InstallError(f"{name} begins or ends with a blank or holds a line break: it cannot be kept")
    before = read(path)
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
