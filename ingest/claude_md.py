"""CLAUDE.md's memory section: the one block of a file Claude Code loads that reverie writes.

The block runs from a line `<!-- MEMORY:START -->` to a line `<!-- MEMORY:END -->`. `splice`
puts a new body between them and leaves every byte outside them as it was: the markers' own
lines, the text around them, a byte-order mark, the line endings the file uses. A marker only
counts on a line of its own outside a fenced code block (``` or ~~~), so a README quoting the
markers in an example is not taken for the block. A file without the block gets it appended; a
file that holds one marker without the other, or two blocks, is refused (MemoryBlockError):
which text is reverie's would be a guess; so is one that ends inside a code block (the block
appended would be code).

Readers of CLAUDE.md (the import of Claude Code's own memory) use `outside` to leave the block
out: it is reverie's, and reading it back would be an echo; and `lines_in_code` to read fences
as this module does. Pure text, standard library only.
"""

import re
from collections.abc import Iterator
from typing import NamedTuple

START = "<!-- MEMORY:START -->"
END = "<!-- MEMORY:END -->"
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_BLANK = " \t\ufeff"  # around a marker: spaces, tabs, and the byte-order mark of a file opening with it


class MemoryBlockError(ValueError):
    """The file's markers do not make one block, or it ends inside a code block."""


class Block(NamedTuple):
    """Where the block lies: its START line from `start`, its body from `body_start` to
    `body_end` (where the END line begins), the END line (and its break) until `end`."""

    start: int
    body_start: int
    body_end: int
    end: int


def lines_in_code(text: str) -> Iterator[tuple[str, bool]]:
    """Each line of `text` (with its break), and whether it belongs to a fenced code block (its
    fences included), as CommonMark reads fences: ``` or ~~~ (3 or more, indented 3 spaces at
    most; a backtick fence's info string holds no backtick), closed by a run of the same
    character at least as long, with nothing but spaces or tabs after it."""
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        opened = _FENCE.match(line.rstrip("\r\n"))
        if fence is None and opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            fence = opened.group(1)
            yield line, True
        elif fence is not None:
            if opened and opened.group(1).startswith(fence) and not opened.group(2).strip(" \t"):
                fence = None  # the same character, at least as many, nothing after but blanks
            yield line, True
        else:
            yield line, False


def find_block(text: str) -> Block | None:
    """The block of `text`, or None when it has no marker; MemoryBlockError when its markers
    do not make exactly one block."""
    starts: list[tuple[int, int]] = []  # (start of the line, end of the line with its break)
    ends: list[tuple[int, int]] = []
    at = 0
    for line, in_code in lines_in_code(text):
        marker = line.strip(_BLANK + "\r\n")
        if not in_code and marker == START:
            starts.append((at, at + len(line)))
        elif not in_code and marker == END:
            ends.append((at, at + len(line)))
        at += len(line)
    if not starts and not ends:
        return None
    if len(starts) != 1 or len(ends) != 1 or ends[0][0] < starts[0][1]:
        raise MemoryBlockError(
            f"the file has {len(starts)} {START} and {len(ends)} {END} lines outside code blocks: "
            "reverie writes only between one START line and one END line after it; fix the markers by hand"
        )
    return Block(starts[0][0], starts[0][1], ends[0][0], ends[0][1])


def line_break(text: str) -> str:
    """The line break `text` uses most ("\\r\\n" or "\\n"; "\\n" for a text without one)."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def splice(text: str, body: str) -> str:
    """`text` with the block's body replaced by `body` (its lines broken with "\\n"), or the block
    appended after a blank line when there is none; the result uses `text`'s line breaks, and
    every byte outside the block is `text`'s. MemoryBlockError when the markers make no single
    block, or when a file without one ends inside a code block (the block would be code)."""
    newline = line_break(text)
    inner = "".join(line + newline for line in body.splitlines())
    block = find_block(text)
    if block is not None:
        return text[: block.body_start] + inner + text[block.body_end :]
    if _ends_in_code(text):
        raise MemoryBlockError("the file ends inside a code block (a fence never closed): close it first")
    if not text.strip("\ufeff"):
        return text + START + newline + inner + END + newline
    joint = "" if text.endswith(("\n", "\r")) else newline
    return text + joint + newline + START + newline + inner + END + newline


def _ends_in_code(text: str) -> bool:
    """Whether a line added at the end of `text` would be code (a fence left open)."""
    joint = "" if not text or text.endswith(("\n", "\r")) else "\n"
    return list(lines_in_code(text + joint + "x"))[-1][1]


def outside(text: str) -> str:
    """`text` without its block (markers included), for readers of what the user wrote; `text`
    whole when its markers make no single block."""
    try:
        block = find_block(text)
    except MemoryBlockError:
        return text
    return text if block is None else text[: block.start] + text[block.end :]
