"""CLAUDE.md's memory section: the one block of a file Claude Code loads that reverie writes.

The block runs from a line `<!-- MEMORY:START -->` to a line `<!-- MEMORY:END -->`. `splice`
puts a new body between them and leaves every byte outside them as it was: the markers' own
lines, the text around them, a byte-order mark, the line endings the file uses. A marker only
counts on a line of its own outside a fenced code block (``` or ~~~), so a README quoting the
markers in an example is not taken for the block. A file without the block gets it appended; a
file that holds one marker without the other, or two blocks, is refused (MemoryBlockError):
which text is reverie's would be a guess.

Readers of CLAUDE.md (the import of Claude Code's own memory) use `outside` to leave the block
out: it is reverie's, and reading it back would be an echo. Pure text, standard library only.
"""

import re
from typing import NamedTuple

START = "<!-- MEMORY:START -->"
END = "<!-- MEMORY:END -->"
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BLANK = " \t\ufeff"  # around a marker: spaces, tabs, and the byte-order mark of a file opening with it


class MemoryBlockError(ValueError):
    """The file's markers do not make one block."""


class Block(NamedTuple):
    """Where the block's body lies: from the end of the START line to the start of the END line."""

    body_start: int
    body_end: int


def find_block(text: str) -> Block | None:
    """The block of `text`, or None when it has no marker; MemoryBlockError when its markers
    do not make exactly one block."""
    starts: list[tuple[int, int]] = []  # (start of the line, end of the line with its break)
    ends: list[int] = []
    fence: str | None = None
    at = 0
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        opened = _FENCE.match(bare)
        if fence is None and opened:
            fence = opened.group(1)[0] * len(opened.group(1))
        elif fence is not None and opened and opened.group(1).startswith(fence) and not bare.strip(" `~"):
            fence = None
        elif fence is None and bare.strip(_BLANK) == START:
            starts.append((at, at + len(line)))
        elif fence is None and bare.strip(_BLANK) == END:
            ends.append(at)
        at += len(line)
    if not starts and not ends:
        return None
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0][1]:
        raise MemoryBlockError(
            f"the file has {len(starts)} {START} and {len(ends)} {END} lines outside code blocks: "
            "reverie writes only between one START line and one END line after it; fix the markers by hand"
        )
    return Block(starts[0][1], ends[0])


def line_break(text: str) -> str:
    """The line break `text` uses most ("\\r\\n" or "\\n"; "\\n" for a text without one)."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def splice(text: str, body: str) -> str:
    """`text` with the block's body replaced by `body` (its lines broken with "\\n"), or the block
    appended after a blank line when there is none; the result uses `text`'s line breaks, and
    every byte outside the block is `text`'s."""
    newline = line_break(text)
    inner = "".join(line + newline for line in body.splitlines())
    block = find_block(text)
    if block is not None:
        return text[: block.body_start] + inner + text[block.body_end :]
    if not text.strip("\ufeff"):
        return text + START + newline + inner + END + newline
    joint = "" if text.endswith(("\n", "\r")) else newline
    return text + joint + newline + START + newline + inner + END + newline


def body_of(text: str) -> str | None:
    """What the block holds now, or None when the file has none."""
    block = find_block(text)
    return None if block is None else text[block.body_start : block.body_end]


def outside(text: str) -> str:
    """`text` without its block (markers included), for readers of what the user wrote; `text`
    whole when its markers make no single block."""
    try:
        block = find_block(text)
    except MemoryBlockError:
        return text
    if block is None:
        return text
    start = text.rfind(START, 0, block.body_start)
    start = text.rfind("\n", 0, start) + 1
    end_line = text.find("\n", block.body_end)
    return text[:start] + (text[end_line + 1 :] if end_line >= 0 else "")
