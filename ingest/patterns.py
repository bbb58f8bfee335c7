"""Regular expressions for the hook, compiled once per install rather than once per process.

Importing `re` costs a hook about 6 ms, measured as whole processes (`python -S -I`: 13.2 ms with
it, 7.3 ms without; the hook's whole budget beside `python -c pass` is about 10), almost all of
it the parser and compiler (`re._parser`, `re._compiler`) and the enums they build. About half
of real hook payloads hold a word a secret starts with ("key", "ey", "s.") and need a pattern.
So `compiled` keeps what `re`'s compiler makes of each pattern (the code `_sre` runs, its flags
and groups), in a file beside the module's bytecode, as Python keeps a module's; the next
process hands that to `_sre` directly, `re` never imported. The file is named by the
interpreter's bytecode tag and `_sre`'s version: another Python or another `_sre` reads its own.
`_sre` checks the code it is given before running it, and this file is trusted as the `.pyc`
files beside it are.

Patterns from this cache behave as `re.compile`'s: the same object type, methods and matches.
Replacement must be a function (a template string would make `_sre` import `re`).
"""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]  # (typeshed has no stubs for it)
import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Iterable

    Entry = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]

_CACHE = os.path.join(
    os.path.dirname(os.path.abspath(__file__)),
    "__pycache__",
    f"patterns.{sys.implementation.cache_tag}.sre{_sre.MAGIC}.marshal",
)
_patterns: dict[str, re.Pattern[str]] = {}
_stored: dict[str, bytes] | None = None


def compiled(source: str) -> re.Pattern[str]:
    """`re.compile(source)`, from the cache if it holds it. A pattern it lacks is compiled by
    `re` (imported then); a process that compiled some stores them all when it exits."""
    pattern = _patterns.get(source)
    if pattern is None:
        entry = _entries().get(source)
        pattern = _sre.compile(source, *marshal.loads(entry)) if entry else _compile(source)
        _patterns[source] = pattern
    return pattern


def store(sources: Iterable[str], path: str | None = None) -> str | None:
    """Compile `sources` (with what the cache holds already) into the cache; its path, or None
    if it cannot be written (a read-only install: processes then compile as they need)."""
    path = path or _CACHE
    entries = _read(path)  # as it is now: what other processes stored meanwhile stays
    try:
        new = {source: marshal.dumps(_entry(source)) for source in sources if source not in entries}
    except (AttributeError, TypeError, ValueError):  # another Python's `re` internals: no cache
        return None
    if not new:
        return path
    entries.update(new)
    temporary = f"{path}.{os.getpid()}"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as f:
            f.write(marshal.dumps(entries))
        os.replace(temporary, path)  # readers see the old file or the new one, never a part
    except OSError:
        return None
    return path


def _entries() -> dict[str, bytes]:
    global _stored
    if _stored is None:
        _stored = _read(_CACHE)
    return _stored


def _read(path: str) -> dict[str, bytes]:
    try:
        with open(path, "rb") as f:
            loaded = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


_missed: list[str] = []


def _compile(source: str) -> re.Pattern[str]:
    import re

    if not _missed and not sys.dont_write_bytecode:
        import atexit

        atexit.register(lambda: store(_missed))
    _missed.append(source)
    return re.compile(source)


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
