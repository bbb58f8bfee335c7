"""A JSON file edited where its value changed, and nowhere else: the user's formatting stays.

Install and uninstall change a few of a settings file's values (reverie's hooks, its MCP server,
the transcripts' retention). Serializing the whole object again would rewrite everything else
with our indentation; instead each changed value is spliced into the file's own text: a member
or an item taken out with the separator before it, one added after the last, in the
indentation, separators and line endings the file already uses (tabs, four spaces, one line).
Text outside the changed values (key order, spacing, a missing final newline, a byte-order
mark) stays byte for byte, so adding entries and taking them out again gives the bytes back.

Should the text edited in place not read back as the value wanted (duplicate keys, say), the
whole value is written in the file's indentation instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

_DECODER = json.JSONDecoder()
_BLANK = " \t\r\n"
_BOM = "\ufeff"


@dataclass
class Span:
    """Where a value lies in the text: [start, end); a container's items (for an object, the
    members' values, with where each key starts and the keys themselves)."""

    start: int
    end: int = 0
    items: list[Span] = field(default_factory=list)
    keys: list[str] | None = None  # None: not an object
    key_starts: list[int] = field(default_factory=list)

    def member_start(self, index: int) -> int:
        return self.key_starts[index] if self.keys is not None else self.items[index].start


@dataclass(frozen=True)
class Style:
    """How the file writes JSON: one level of indentation, what sits between a key and its
    value, between items on one line, and the line ending."""

    indent: str = "  "
    colon: str = ": "
    comma: str = ", "
    newline: str = "\n"


def rewritten(before: bytes | None, found: dict[str, Any], after: dict[str, Any]) -> bytes:
    """The file whose bytes were `before` (holding `found`) holding `after` instead: edited in
    place (see the module's docstring); a new or empty file as JSON indented by two spaces."""
    if before is None or not before.strip():
        return _dumped(after)
    try:
        text = before.decode("utf-8")
    except UnicodeDecodeError:  # UTF-16 and the like, which json reads: written anew
        return _dumped(after)
    bom = _BOM if text.startswith(_BOM) else ""
    text = text.removeprefix(_BOM)
    try:
        root = _parse(text, _skip(text, 0))
        style = _style(text, root)
        edited = _spliced(text, root, found, after, style)
        if _same(json.loads(edited), after):
            return (bom + edited).encode()
    except (ValueError, RecursionError):
        style = Style()
    trailing = text[len(text.rstrip(_BLANK)) :]
    return (bom + _rendered(after, style, "", "\n" in text.strip()) + trailing).encode()


def _dumped(value: dict[str, Any]) -> bytes:
    return (_rendered(value, Style(), "", True) + "\n").encode()


def _same(one: Any, other: Any) -> bool:
    """Equal as JSON values: `true` is not `1`, nor `1.0` `1`, as they are to Python."""
    if type(one) is not type(other):
        return False
    if isinstance(one, dict):
        return one.keys() == other.keys() and all(_same(one[k], other[k]) for k in one)
    if isinstance(one, list):
        return len(one) == len(other) and all(_same(a, b) for a, b in zip(one, other, strict=True))
    return bool(one == other)


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _BLANK:
        at += 1
    return at


def _parse(text: str, at: int) -> Span:
    """The value starting at `at` (no blank before it), with its items' spans."""
    opening = text[at : at + 1]
    if opening not in ("{", "["):
        _, end = _DECODER.raw_decode(text, at)
        return Span(at, end)
    span = Span(at, keys=[] if opening == "{" else None)
    closing = "}" if opening == "{" else "]"
    at = _skip(text, at + 1)
    if text[at : at + 1] == closing:
        span.end = at + 1
        return span
    while True:
        if span.keys is not None:
            key, after_key = _DECODER.raw_decode(text, at)
            if not isinstance(key, str):
                raise ValueError("a key that is no string")
            span.keys.append(key)
            span.key_starts.append(at)
            at = _skip(text, after_key)
            if text[at : at + 1] != ":":
                raise ValueError("no colon after a key")
            at = _skip(text, at + 1)
        item = _parse(text, at)
        span.items.append(item)
        at = _skip(text, item.end)
        if text[at : at + 1] == closing:
            span.end = at + 1
            return span
        if text[at : at + 1] != ",":
            raise ValueError("no comma between items")
        at = _skip(text, at + 1)


def _style(text: str, root: Span) -> Style:
    """The file's own indentation, separators and line ending (a default for what it lacks)."""
    colons, commas = [], []
    spans = [root]
    for span in spans:  # breadth first: the outer levels speak first
        if span.keys:
            colons.append(text[_key_end(text, span, 0) : span.items[0].start])
        if len(span.items) > 1:
            commas.append(text[span.items[0].end : span.member_start(1)])
        spans += span.items
    return Style(
        indent=next((lead for lead in _leads(text) if lead), "  "),
        colon=next((c for c in colons if "\n" not in c), ": "),
        comma=next((c for c in commas if "\n" not in c), ", "),
        newline="\r\n" if "\r\n" in text else "\n",
    )


def _leads(text: str) -> list[str]:
    """The indentation of each line that holds something."""
    return [line[: len(line) - len(line.lstrip(" \t"))] for line in text.split("\n") if line.strip()]


def _key_end(text: str, span: Span, index: int) -> int:
    return int(_DECODER.raw_decode(text, span.key_starts[index])[1])


def _spliced(text: str, root: Span, found: Any, wanted: Any, style: Style) -> str:
    edits: list[tuple[int, int, str]] = []
    _edit(text, root, found, wanted, style, "\n" in text[root.start : root.end] or not root.items, edits)
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _edit(
    text: str,
    span: Span,
    found: Any,
    wanted: Any,
    style: Style,
    multiline: bool,
    edits: list[tuple[int, int, str]],
) -> None:
    """Add to `edits` what makes the value at `span` (`found`) `wanted`; `multiline`: whether
    the container around it spreads over lines."""
    if _same(found, wanted):
        return
    inner = "\n" in text[span.start : span.end]
    if span.items and span.keys is not None and isinstance(found, dict) and isinstance(wanted, dict):
        _edit_object(text, span, found, wanted, style, inner, edits)
    elif span.items and span.keys is None and isinstance(found, list) and isinstance(wanted, list):
        _edit_array(text, span, found, wanted, style, inner, edits)
    else:  # a scalar, an empty container, or one of another type: written whole
        edits.append(
            (span.start, span.end, _rendered(wanted, style, _indentation(text, span.start), multiline))
        )


def _edit_object(
    text: str, span: Span, found: dict[str, Any], wanted: dict[str, Any], style: Style, inner: bool,
    edits: list[tuple[int, int, str]],
) -> None:  # fmt: skip
    assert span.keys is not None
    if len(set(span.keys)) != len(span.keys):
        raise ValueError("a key written twice")
    gone = {i for i, key in enumerate(span.keys) if key not in wanted}
    for i, key in enumerate(span.keys):
        if i not in gone:
            _edit(text, span.items[i], found[key], wanted[key], style, inner, edits)
    added = [
        (json.dumps(key, ensure_ascii=False) + style.colon, wanted[key]) for key in wanted if key not in found
    ]
    _reshape(text, span, gone, added, style, inner, edits, wanted)


def _edit_array(
    text: str, span: Span, found: list[Any], wanted: list[Any], style: Style, inner: bool,
    edits: list[tuple[int, int, str]],
) -> None:  # fmt: skip
    if len(found) == len(wanted) and sum(not _same(a, b) for a, b in zip(found, wanted, strict=True)) <= 1:
        for item, was, now in zip(span.items, found, wanted, strict=True):
            _edit(text, item, was, now, style, inner, edits)
        return
    kept, matched = set(), 0  # the items kept, in order, as the head of `wanted`; the rest added
    for i, item in enumerate(found):
        if matched < len(wanted) and _same(item, wanted[matched]):
            kept.add(i)
            matched += 1
    gone = set(range(len(found))) - kept
    _reshape(text, span, gone, [("", value) for value in wanted[matched:]], style, inner, edits, wanted)


def _reshape(
    text: str, span: Span, gone: set[int], added: list[tuple[str, Any]], style: Style, inner: bool,
    edits: list[tuple[int, int, str]], wanted: Any,
) -> None:  # fmt: skip
    """Take the members `gone` out of the container at `span`, each with the separator before it
    (the first, with the one after it), and add `added` after its last: each what precedes the
    value (its key, for a member), and the value."""
    count = len(span.items)
    if len(gone) == count and added:
        edits.append((span.start, span.end, _rendered(wanted, style, _indentation(text, span.start), inner)))
        return
    if len(gone) == count:
        edits.append((span.start + 1, span.end - 1, ""))
        return
    for first, last in _runs(sorted(gone)):
        if first > 0:
            edits.append((span.items[first - 1].end, span.items[last].end, ""))
        else:
            edits.append((span.member_start(0), span.member_start(last + 1), ""))
    if added:
        edits.append((span.items[-1].end, span.items[-1].end, _appended(text, span, added, style)))


def _appended(text: str, span: Span, added: list[tuple[str, Any]], style: Style) -> str:
    """The text of members added after the container's last: each on a line of its own, indented
    as that last one is, when it begins a line; else on its line."""
    start = span.member_start(len(span.items) - 1)
    lead = _indentation(text, start)
    own_line = not text[text.rfind("\n", 0, start) + 1 : start].strip()
    separator = "," + style.newline + lead if own_line else style.comma
    return "".join(separator + head + _rendered(value, style, lead, own_line) for head, value in added)


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Consecutive indices as (first, last) runs."""
    runs: list[tuple[int, int]] = []
    for i in indices:
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def _indentation(text: str, at: int) -> str:
    """The indentation of the line `at` is on."""
    line = text[text.rfind("\n", 0, at) + 1 : at]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _rendered(value: Any, style: Style, lead: str, multiline: bool) -> str:
    """`value` as JSON in the file's style: over lines indented from `lead`, or on one line."""
    if not multiline:
        return json.dumps(value, ensure_ascii=False, separators=(style.comma, style.colon))
    spread = json.dumps(value, ensure_ascii=False, indent=style.indent, separators=(",", style.colon))
    return spread.replace("\n", style.newline + lead)
