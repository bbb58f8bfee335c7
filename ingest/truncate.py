"""Oversized payloads are cut down, never dropped: long strings keep their head and tail.

A tool response can be megabytes (a file read, a build log). Every string longer than the
limit keeps its beginning and end around a marker that says how much was cut; if the event
is still too large, the limit shrinks until it fits.

Shape is cut like size. Nesting deeper than MAX_DEPTH becomes a marker, even where Python's
JSON parser could not go (the text is cut first); lists and objects longer than an event can
hold keep their head and a marker before anything else walks them; and input cut off midway
(over MAX_INPUT) keeps every value that ends before the cut and a head of the one it goes
through. Each step is linear, and none recurses on the Python stack deeper than MAX_DEPTH.

Each kept piece can be cleaned (redacted) on the way: the cleaning sees a few KiB beyond the
cut, so a secret that straddles it is still recognised whole, and a megabyte string costs
no more to redact than its kept pieces.
"""

from __future__ import annotations

import codecs
import gc
from itertools import islice

from ingest import cjson
from ingest.patterns import compiled

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Iterator
    from typing import Any

STRING_LIMIT = 32_768
KEY_LIMIT = 1024
EVENT_LIMIT = 512 * 1024
MAX_INPUT = 64 * 2**20
MAX_DEPTH = 64
_TAIL = 1024
# Ever harder cuts for an event over EVENT_LIMIT: strings first, then long lists and objects.
_SHRINK: list[tuple[int, int | None]] = [(4096, None), (512, None), (512, 1000), (128, 100), (64, 10)]
# What cleaning sees beyond a cut: longer than any secret, private keys included (an RSA-8192
# key in PEM is about 6,400 characters), so none is cut out of its own pattern.
_MARGIN = 8192


def cut(text: str, limit: int = STRING_LIMIT, clean: Callable[[str], str] | None = None) -> str:
    """`text` (cleaned, if given `clean`) cut to about `limit` characters around a marker."""
    if len(text) <= limit:
        return clean(text) if clean is not None else text
    tail = min(_TAIL, limit // 4)
    head = limit - tail
    first, last = text[: head + _MARGIN], text[-(tail + _MARGIN) :]
    if clean is not None:
        first, last = clean(first), clean(last)
    return f"{first[:head]}\n…[reverie: truncated {len(text) - head - tail} characters]…\n{last[-tail:]}"


def _too_deep(what: str) -> str:
    return f"…[reverie: nesting deeper than {MAX_DEPTH} cut: {what}]"


# What a list or object holds of an event's room from the moment it is kept: room for its
# first values or its marker, given back when its own values are kept. So however many lists
# and objects are kept, each one keeps values, not a marker only.
_RESERVED = 64


def _least_size(value: Any) -> int:
    """The fewest bytes `value` takes in an event (with a separator): a string cut as short as
    cuts go, a list or object with what it holds back."""
    if isinstance(value, str):
        return min(len(value), _SHRINK[-1][0]) + 3
    return 2 + _RESERVED if isinstance(value, dict | list) else 2


_MORE_ITEMS = r"(?s)…\[reverie: (\d+) more items(.*)\]"
_MORE_KEYS = r"(?s)(\d+) more keys(.*)"


def _more(cut: int, last: Any, counted: str, unit: str) -> str:
    """What a marker says of `cut` values cut, the last of them `last`: if that is a marker of
    an earlier cut, its count is added, or its words kept."""
    if isinstance(last, str):
        earlier = compiled(counted).fullmatch(last)
        if earlier:
            return f"{cut - 1 + int(earlier[1])} more {unit}{earlier[2]}"
        if last.startswith("…[reverie:"):
            return f"{cut} more {unit}, the last of them {last}"
    return f"{cut} more {unit}"


def truncate_strings(
    value: Any,
    limit: int | None = STRING_LIMIT,
    max_items: int | None = None,
    clean: Callable[[str], str] | None = None,
    max_size: int | None = None,
) -> Any:
    """The same JSON value with every string longer than `limit` cut to about that length
    (each kept piece passed through `clean`), every key to KEY_LIMIT, lists and objects nested
    deeper than MAX_DEPTH replaced by a marker, and, given `max_items`, every list and object
    cut to that many items (and a marker); given `max_size`, they are cut too once what is kept
    would take more bytes than that even with every string cut as short as cuts go.

    One walk, in document order, with its own stack: it costs the values kept, not the values
    given, and recurses on nothing.
    """
    room = max_size
    todo: list[tuple[dict[str, Any] | list[Any], dict[str, Any] | list[Any], int]] = []

    def copy(v: Any, depth: int) -> Any:
        if isinstance(v, str):
            return v if limit is None else cut(v, limit, clean)
        if not isinstance(v, dict | list):
            return v
        if depth > MAX_DEPTH:
            return _too_deep(
                f"an object of {len(v)} keys" if isinstance(v, dict) else f"a list of {len(v)} items"
            )
        kept: dict[str, Any] | list[Any] = {} if isinstance(v, dict) else []
        todo.append((v, kept, depth))
        return kept

    def fits(size: int) -> bool:
        nonlocal room
        if room is not None:
            if size > room:
                return False
            room -= size
        return True

    root = copy(value, 1)
    while todo:
        source, target, depth = todo.pop()
        queued = len(todo)
        if room is not None:
            room += _RESERVED
        if isinstance(source, dict) and isinstance(target, dict):
            for k, v in islice(source.items(), max_items):
                key = cut(k, KEY_LIMIT) if len(k) > KEY_LIMIT else k
                if not fits(len(key) + 4 + _least_size(v)):
                    break
                target[key if key not in target else f"{key} ({len(target)})"] = copy(v, depth + 1)
            if len(target) < len(source):
                last = source.get("reverie_truncated")
                target["reverie_truncated"] = _more(len(source) - len(target), last, _MORE_KEYS, "keys")
        elif isinstance(source, list) and isinstance(target, list):
            for v in islice(source, max_items):
                if not fits(_least_size(v)):
                    break
                target.append(copy(v, depth + 1))
            if len(target) < len(source):
                more = _more(len(source) - len(target), source[-1], _MORE_ITEMS, "items")
                target.append(f"…[reverie: {more}]")
        todo[queued:] = reversed(todo[queued:])  # the first child is walked first
    return root


# Up to the next bracket outside a string (or the end): a string's brackets are not structure.
# Possessive throughout, so an unclosed string or a bracket-free tail costs one pass, not many.
_TO_BRACKET = r'(?s)(?:[^"\[\]{}]++|"(?:[^"\\]++|\\.?)*+(?:"|\Z))*+([\[\]{}]|\Z)'


def _brackets(text: str, start: int) -> Iterator[re.Match[str]]:
    """The brackets outside strings from `start` on (then one empty match at the end)."""
    return compiled(_TO_BRACKET).finditer(text, start)


def _cut_deep(text: str, start: int) -> tuple[str, int | None]:
    """The JSON value at `start`, its lists and objects nested deeper than MAX_DEPTH replaced by
    a marker, so that Python's recursive parser can read it; and where it ends (None if it does
    not). One pass; Python only steps from bracket to bracket."""
    pieces, kept, depth, cut_from = [], start, 0, start
    for match in _brackets(text, start):
        bracket = match.group(1)
        if not bracket:
            break
        if bracket in "[{":
            depth += 1
            if depth == MAX_DEPTH + 1:
                cut_from = match.start(1)
            continue
        if depth == MAX_DEPTH + 1:
            pieces += [text[kept:cut_from], cjson.dumps(_too_deep(f"{match.end(1) - cut_from} characters"))]
            kept = match.end(1)
        depth -= 1
        if depth == 0:
            return "".join([*pieces, text[kept : match.end(1)]]), match.end(1)
    return "".join([*pieces, text[kept : cut_from if depth > MAX_DEPTH else len(text)]]), None


def _end_of(text: str, start: int, most: int) -> tuple[int | None, int]:
    """Where the list or object at `start` ends (None if not within `most` brackets), and
    how many brackets that took."""
    depth = 0
    for seen, match in enumerate(islice(_brackets(text, start), most), 1):
        bracket = match.group(1)
        if not bracket:
            break
        depth += 1 if bracket in "[{" else -1
        if depth == 0:
            return match.end(1), seen
    return None, most


def loads(raw: bytes) -> Any:
    """`json.loads`, except that nesting too deep for it is cut to MAX_DEPTH (with a marker)
    rather than refused, and that JSON with more values than an event can hold is read only
    as far as _HEAD_VALUES values (marked as cut). Raises ValueError if `raw` is not JSON.

    Deep input costs one more pass over the text, a multitude of values a walk through
    _HEAD_VALUES of them; any other input costs nothing more.
    """
    # a cheap bound: values in lists and objects after the first have a comma before them
    if raw.count(b",") > _MANY_VALUES:
        return _head(raw, "more values than an event can hold: the rest is cut", whole=True)
    with _Parsing():
        try:
            return cjson.loads(raw)
        except RecursionError:
            text = cjson.text(raw)
            value, end = _cut_deep(text, 0)
            return cjson.loads(value if end is None else value + text[end:])


def loads_head(raw: bytes, why: str) -> Any:
    """The JSON value whose first bytes `raw` holds, the rest having been cut off: its values
    in document order, each whole, up to where the cut goes through one (a string keeps its
    head), or up to _HEAD_VALUES values, or nesting past MAX_DEPTH (where the head stops,
    unless the nesting ends within the bracket budget); and in every list and object still
    open there, a marker that says `why`. A marker alone if `raw` holds no JSON value.
    """
    return _head(raw, why, whole=False)


class _Parsing:
    """No cyclic garbage collection meanwhile: parsed JSON holds no cycles, and collecting
    as millions of small lists and objects are made would multiply a parse's time by five.
    (A class: contextlib costs the hook half a millisecond to import.)"""

    def __enter__(self) -> None:
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            gc.enable()


_SPACE = " \t\n\r"
_NOTHING = object()  # where a head keeps no value, only its container's marker
# Values a head keeps at most: what fills an event at 16 bytes a value. Each costs the hook
# a few microseconds.
_HEAD_VALUES = EVENT_LIMIT // 16
# Past this many values (more than an event holds, at 2 bytes each) json.loads is not worth
# its time: seconds, for 64 MiB of them.
_MANY_VALUES = EVENT_LIMIT // 2


def _head(raw: bytes, why: str, whole: bool) -> Any:
    """The JSON value in `raw` as far as its first _HEAD_VALUES values (see loads_head). If
    `raw` is `whole`, a value it holds that is not JSON raises ValueError (what follows where
    the head stops is not read), else it ends the head.

    Linear: Python steps through lists and objects value by value, recursing MAX_DEPTH deep
    at most; the parser reads each scalar.
    """
    # as json.loads decodes, or, in a head, leniently (a cut may go through a character)
    import json

    decoder = codecs.getincrementaldecoder(json.detect_encoding(raw))("surrogatepass" if whole else "replace")
    text = decoder.decode(raw, whole)
    marker = f"…[reverie: {why}]"
    left = _HEAD_VALUES

    def broken(i: int) -> None:
        if whole:
            raise ValueError(f"not JSON at character {i}")

    def value_at(i: int, depth: int) -> tuple[Any, int | None]:
        """The value at `i` as far as the head goes, and where it ends (None where it stops)."""
        nonlocal left
        left -= 1
        opener = text[i : i + 1]
        if opener in ("[", "{") and depth > MAX_DEPTH:
            end, brackets = _end_of(text, i, left)
            left -= brackets
            return (_NOTHING, None) if end is None else (_too_deep(f"{end - i} characters"), end)
        if opener in ("[", "{"):
            return container_at(i, depth) if left > 0 else (_NOTHING, None)
        try:
            value, end = cjson.raw_decode(text, i)
        except ValueError:
            if whole:
                raise
            return (_string_head(text, i + 1) + marker if opener == '"' else _NOTHING), None
        if not whole and end == len(text) and isinstance(value, int | float):
            return _NOTHING, None  # the cut may have gone through its digits
        return value, end

    def container_at(i: int, depth: int) -> tuple[Any, int | None]:
        members: dict[str, Any] | list[Any] = {} if text[i] == "{" else []
        i = _skip(text, i + 1)
        while left > 0:
            if text.startswith("]" if isinstance(members, list) else "}", i):
                return members, i + 1
            if members:
                if not text.startswith(",", i):
                    broken(i)
                    break
                i = _skip(text, i + 1)
            key = ""
            if isinstance(members, dict):
                found = _key_at(text, i)
                if found is None:
                    broken(i)
                    break
                key, i = found
            value, end = value_at(i, depth + 1)
            if value is not _NOTHING and isinstance(members, dict):
                members[key] = value
            elif value is not _NOTHING and isinstance(members, list):
                members.append(value)
            if end is None:
                break
            i = _skip(text, end)
        if isinstance(members, dict):
            members["reverie_truncated"] = marker
        else:
            members.append(marker)
        return members, None

    with _Parsing():
        start = _skip(text, 0)
        value, end = value_at(start, 1)
    if end is not None and _skip(text, end) < len(text):
        broken(end)
    return marker if value is _NOTHING else value


def _key_at(text: str, i: int) -> tuple[str, int] | None:
    """The key at `i` and where its value starts, or None if there is none."""
    if not text.startswith('"', i):
        return None
    try:
        key, i = cjson.raw_decode(text, i)
    except ValueError:
        return None
    i = _skip(text, i)
    return (key, _skip(text, i + 1)) if text.startswith(":", i) else None


def _skip(text: str, i: int) -> int:
    """Where the next value starts: past the whitespace at `i`."""
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


def _string_head(text: str, start: int) -> str:
    """The first STRING_LIMIT characters of the JSON string the cut went through, decoded
    (an escape the cut went through is left out)."""
    import json

    piece = text[start : start + STRING_LIMIT]
    for end in range(len(piece), max(len(piece) - 6, 0) - 1, -1):
        try:
            head: str = json.loads(f'"{piece[:end]}"', strict=False)
            return head
        except ValueError:
            continue
    return ""


def _scalars_only(payload: dict[str, Any], size: int) -> dict[str, Any]:
    kept = {
        k: v for k, v in list(payload.items())[:64] if v is None or isinstance(v, str | int | float | bool)
    }
    kept["reverie_truncated"] = f"payload of {size} bytes cut to its top-level scalar fields"
    return kept


def encode_within_budget(envelope: dict[str, Any], encode: Callable[[dict[str, Any]], bytes]) -> bytes:
    """Encode the event (its strings already cut to STRING_LIMIT), cutting more until it fits."""
    data = encode(envelope)
    shrinks = iter(_SHRINK)
    while len(data) > EVENT_LIMIT:
        step = next(shrinks, None)
        if step is None:
            envelope["payload"] = _scalars_only(envelope["payload"], len(data))
            return encode(envelope)
        envelope["payload"] = truncate_strings(envelope["payload"], *step)
        data = encode(envelope)
    return data


def pattern_sources() -> list[str]:
    """Every pattern cutting may compile, for ingest/patterns.py to keep compiled."""
    return [_MORE_ITEMS, _MORE_KEYS, _TO_BRACKET]
