"""CLAUDE.md's memory section: the one block of a file Claude Code loads that reverie writes.

The block runs from a line `<!-- MEMORY:START -->` to a line `<!-- MEMORY:END -->`. `splice`
puts a new body between them and leaves every byte outside them as it was: the markers' own
lines, the text around them, a byte-order mark, the line endings the file uses. A marker only
counts as CommonMark reads the file (schemas/text/markdown.py): an HTML block of its own at the
top level, so a README quoting the markers in a fenced or indented code block, a list item, a
quote or an HTML comment is not taken for the block. A file without the block gets it appended;
a file that holds one marker without the other, or two blocks, is refused (MemoryBlockError):
which text is reverie's would be a guess; so is one whose end would swallow the block appended
(a code fence, an HTML block or a comment never closed), or a body that would not read back as
the block. What `splice` writes is read back before it is returned.

Readers of CLAUDE.md (the import of Claude Code's own memory) use `outside` to leave the block
out: it is reverie's, and reading it back would be an echo.
"""

from typing import NamedTuple

from schemas.text.markdown import html_lines, lines

START = "<!-- MEMORY:START -->"
END = "<!-- MEMORY:END -->"


class MemoryBlockError(ValueError):
    """The file's markers do not make one block, or the block written would not read back."""


class Block(NamedTuple):
    """Where the block lies: its START line from `start`, its body from `body_start` to
    `body_end` (where the END line begins), the END line (and its break) until `end`."""

    start: int
    body_start: int
    body_end: int
    end: int


def find_block(text: str) -> Block | None:
    """The block of `text`, or None when it has no marker; MemoryBlockError when its markers
    do not make exactly one block."""
    offsets = [0]
    for line in lines(text):
        offsets.append(offsets[-1] + len(line))
    marked = html_lines(text)
    starts = [n for n, said in marked.items() if said == START]
    ends = [n for n, said in marked.items() if said == END]
    if not starts and not ends:
        return None
    if len(starts) != 1 or len(ends) != 1 or ends[0] <= starts[0]:
        raise MemoryBlockError(
            f"the file has {len(starts)} {START} and {len(ends)} {END} lines outside code blocks: "
            "reverie writes only between one START line and one END line after it; fix the markers by hand"
        )
    return Block(offsets[starts[0]], offsets[starts[0] + 1], offsets[ends[0]], offsets[ends[0] + 1])


def line_break(text: str) -> str:
    """The line break `text` uses most ("\\r\\n" or "\\n"; "\\n" for a text without one)."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def splice(text: str, body: str) -> str:
    """`text` with the block's body replaced by `body` (its lines broken with "\\n"), or the block
    appended after a blank line when there is none; the result uses `text`'s line breaks, and
    every byte outside the block is `text`'s. MemoryBlockError when the markers make no single
    block, or when the result would not read back with `body` as its block's (a file ending
    in an open code fence, HTML block or comment; a body that would break out of its block)."""
    newline = line_break(text)
    inner = "".join(line + newline for line in body.splitlines())
    block = find_block(text)
    if block is not None:
        spliced = text[: block.body_start] + inner + text[block.body_end :]
    elif not text.strip("\ufeff"):
        spliced = text + START + newline + inner + END + newline
    else:
        joint = "" if text.endswith(("\n", "\r")) else newline
        spliced = text + joint + newline + START + newline + inner + END + newline
    try:
        written = find_block(spliced)
    except MemoryBlockError:
        written = None
    if written is None or spliced[written.body_start : written.body_end] != inner:
        raise MemoryBlockError(
            "the block would not read back as written: the file ends inside a code fence, an HTML "
            "block or a comment that is never closed (close it first)"
            if block is None
            else "the block's new text would not read back as its own: left as it was"
        )
    return spliced


def outside(text: str) -> str:
    """`text` without its block (markers included), for readers of what the user wrote; `text`
    whole when its markers make no single block."""
    try:
        block = find_block(text)
    except MemoryBlockError:
        return text
    return text if block is None else text[: block.start] + text[block.end :]
