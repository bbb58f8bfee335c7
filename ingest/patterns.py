"""Regular expressions for the hook, compiled once per interpreter rather than once per process.

Importing `re` costs a hook about 6 ms, measured as whole processes (`python -S -I`: 13.2 ms with
it, 7.3 ms without; the hook's whole budget beside `python -c pass` is about 10), almost all of
it the parser and compiler (`re._parser`, `re._compiler`) and the enums they build. About half
of real hook payloads hold a word a secret starts with ("key", "ey", "s.") and need a pattern.
So `compiled` keeps what `re`'s compiler makes of each pattern (the code `_sre` runs, its flags
and groups) in a file, as Python keeps a module's bytecode; the next process hands that to
`_sre` directly, `re` never imported.

Where: the user's cache folder (`$XDG_CACHE_HOME/reverie/patterns`, else
`~/.cache/reverie/patterns`), safe to delete, outside the installed package (where it outlived
`pip uninstall`). The hook and `reverie install` both find it from the environment alone, with
no settings read. One file per interpreter, named by its implementation, its full version and
build (`sys.version`: a patch release may change what `_sre` accepts) and `_sre`'s version; the
file repeats that key, and is read only by the interpreter it names. A file no interpreter has
written for a month is removed by the next store beside it.

What is stored is what this very interpreter's `_sre` turns into the pattern `re.compile`
makes: an entry that does not is never written. An entry `_sre` refuses all the same (any
error) is compiled past by `re`, and the process replaces it when it exits. `_sre` checks the
code it is given before running it. Patterns from this cache behave as `re.compile`'s: the same
object type, methods and matches. Replacement must be a function (a template string would make
`_sre` import `re`).

Standard library only, and nothing of it imported but `_sre`, `marshal`, `os` and `sys` when
the cache holds what a process needs: tests run this file alone, under every Python reverie
supports.
"""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]  # (typeshed has no stubs for it)
import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Iterable, Mapping

    Entry = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]

# What a cache file is good for, kept in it: the interpreter that wrote it, to the build.
_KEY = (sys.implementation.cache_tag, sys.version, _sre.MAGIC)
# A file left unwritten this long is taken for an interpreter no longer used: if it is used,
# its next hook compiles what it needs once, and writes the file again.
_UNUSED_S = 30 * 24 * 3600

_patterns: dict[str, re.Pattern[str]] = {}
_stored: dict[str, bytes] | None = None
_missed: list[str] = []


def compiled(source: str) -> re.Pattern[str]:
    """`re.compile(source)`, from the cache if it holds it and `_sre` takes it. Otherwise `re`
    compiles it (imported then), and the process stores what it compiled when it exits."""
    pattern = _patterns.get(source)
    if pattern is None:
        pattern = _cached(source)
        if pattern is None:
            pattern = _compile(source)
        _patterns[source] = pattern
    return pattern


def cache_path(environ: Mapping[str, str] | None = None) -> str | None:
    """This interpreter's cache file, for the environment `environ` (the process's by default);
    None when no home folder is known. Costs a few lookups and a hash of `sys.version`."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, or relative, which the XDG spec says to ignore
        base = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):  # no home at all: no cache, rather than one in the working folder
        return None
    return os.path.join(base, "reverie", "patterns", _file_name())


def store(sources: Iterable[str], path: str | None = None, *, complete: bool = False) -> str | None:
    """Compile `sources` into the cache file at `path` (this interpreter's by default), beside
    what it holds; with `complete`, `sources` are every pattern wanted, and the file keeps no
    other. Returns its path, or None if it cannot be written (processes then compile as they
    need). A source `_sre` cannot be given what `re.compile` makes of it is left out. Writers
    take turns (a lock beside the file): one that read the file before another wrote it would
    write back what it read, and take the other's patterns out.

    Costs `re`'s compile of each source the file lacks; nothing is imported or written when it
    lacks none. A write replaces the file whole, and removes files of interpreters unused for
    a month beside it."""
    path = path or cache_path()
    if path is None:
        return None
    wanted = dict.fromkeys(sources)
    with _locked(path):  # two writers at once: the second starts from what the first wrote
        held = _read(path)  # as it is now: what other processes stored meanwhile stays
        kept = {s: e for s, e in held.items() if (s in wanted or not complete) and _loaded(s, e) is not None}
        new = {s: e for s in wanted if s not in kept and (e := _verified(s)) is not None}
        if not new and kept == held and os.path.exists(path):
            return path
        if not _write(path, {**kept, **new}):
            return None
    _prune(path)
    return path


class _locked:
    """An exclusive lock on the cache file's folder while a writer reads, merges and writes it
    (none when it cannot be had: a read-only home). A plain class: contextlib costs a hook its
    import. `fcntl` is imported only here, by the rare process that stores."""

    def __init__(self, path: str) -> None:
        self.path = os.path.join(os.path.dirname(path), ".lock")
        self.fd = -1

    def __enter__(self) -> None:
        import fcntl

        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except OSError:
            self.__exit__()

    def __exit__(self, *_: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # the lock goes with it
            self.fd = -1


def remove_old_caches() -> None:
    """Remove the files earlier versions kept beside this module's bytecode, inside the
    installed package, where `pip uninstall` left them behind."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.startswith("patterns.") and name.endswith(".marshal"):
            _remove(os.path.join(folder, name))


def _file_name() -> str:
    tag, version, magic = _KEY
    return f"{tag}-{sys.hexversion:x}-{_fnv1a(version):08x}.sre{magic}.marshal"


def _fnv1a(text: str) -> int:
    """A 32-bit hash of `text` that is the same in every process (`hash` is salted per process,
    and `hashlib` costs a hook its OpenSSL)."""
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def _cached(source: str) -> re.Pattern[str] | None:
    entry = _entries().get(source)
    return None if entry is None else _loaded(source, entry)


def _loaded(source: str, entry: bytes) -> re.Pattern[str] | None:
    """The pattern `_sre` builds from `entry`, or None on any error at all: an entry this `_sre`
    refuses must cost a hook `re`'s compile, never its event."""
    try:
        pattern: re.Pattern[str] = _sre.compile(source, *marshal.loads(entry))
    except Exception:
        return None
    return pattern


def _entries() -> dict[str, bytes]:
    global _stored
    if _stored is None:
        path = cache_path()
        _stored = {} if path is None else _read(path)
    return _stored


def _read(path: str) -> dict[str, bytes]:
    """The entries of the file at `path`: none if it is missing, damaged, or another
    interpreter's."""
    try:
        with open(path, "rb") as f:
            key, entries = marshal.loads(f.read())
    except Exception:
        return {}
    if key != _KEY or not isinstance(entries, dict):
        return {}
    return {s: e for s, e in entries.items() if isinstance(s, str) and isinstance(e, bytes)}


def _write(path: str, entries: dict[str, bytes]) -> bool:
    temporary = f"{path}.{os.getpid()}"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as f:
            f.write(marshal.dumps((_KEY, entries)))
        os.replace(temporary, path)  # readers see the old file or the new one, never a part
    except OSError:
        _remove(temporary)
        return False
    return True


def _prune(path: str) -> None:
    """Remove the files beside `path` (other interpreters', and what writers that died left)
    that were last written over `_UNUSED_S` before it."""
    folder = os.path.dirname(path)
    try:
        now = os.stat(path).st_mtime
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        other = os.path.join(folder, name)
        try:
            unused = ".marshal" in name and other != path and now - os.stat(other).st_mtime > _UNUSED_S
        except OSError:
            continue
        if unused:
            _remove(other)


def _remove(path: str) -> None:
    try:  # noqa: SIM105 (contextlib would be one more import for the hook)
        os.unlink(path)
    except OSError:  # gone already, or not this user's to remove: nothing to do either way
        pass


def _compile(source: str) -> re.Pattern[str]:
    import re

    if not _missed and not sys.dont_write_bytecode:
        import atexit

        atexit.register(lambda: store(_missed))
    _missed.append(source)
    return re.compile(source)


def _verified(source: str) -> bytes | None:
    """`source`'s entry, marshalled, if this `_sre` builds from it the very pattern
    `re.compile` makes (Pattern equality compares the code and flags); else None: another
    Python's `re` internals, or code this one's compiler would not make."""
    import re

    expected = re.compile(source)
    try:
        entry = _entry(source)
        pattern = _sre.compile(source, *entry)
    except Exception:
        return None
    same = pattern == expected and (pattern.groups, pattern.groupindex) == (
        expected.groups,
        expected.groupindex,
    )
    return marshal.dumps(entry) if same else None


def _entry(source: str) -> Entry:
    """What `re._compiler.compile` hands `_sre.compile` for `source`, after the pattern itself."""
    from re import _compiler, _parser  # type: ignore[attr-defined]

    parsed = _parser.parse(source, 0)
    code = [int(op) for op in _compiler._code(parsed, 0)]  # its opcodes are named ints
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    return parsed.state.flags, code, parsed.state.groups - 1, groupindex, tuple(indexgroup)
