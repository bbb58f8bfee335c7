"""Markdown as CommonMark reads it (markdown-it-py): reverie's one reader of Markdown.

- **Blocks of a file** (`html_lines`, `headings`): where CLAUDE.md's memory block lies (a
  marker counts as an HTML block of its own at the top level: quoted in a fenced or indented
  code block, a list item, a quote or an HTML comment, it is text), and the headings the import
  of Claude Code's memory cuts a file at (a `#` line in code is no heading).
- **Prose** (`prose`): what the signal readers read of a prompt or a message: its words, without
  fenced or indented code, inline code masked, emphasis and link syntax dropped.
- **Inert text** (`inert`): a memory as one line CommonMark reads as plain text and code spans
  only, nothing Claude Code or a model would take for a heading, HTML, a comment, a link, an
  image, an autolink or an `@path` import (Claude Code loads the file an `@path` names, outside
  code): commands, paths, URLs and `@` words go into code spans, the characters that could open
  anything else are escaped, and the result is parsed again to prove it.

Lines break as CommonMark breaks them (`\\n`, `\\r\\n`, `\\r`). markdown-it-py is imported when
a function first needs it: the hook imports this floor and never reads Markdown.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal, NamedTuple

from schemas.text.fence import BIDI_CONTROLS

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_BREAK = re.compile(r"\r\n|\r|\n")
_parser: MarkdownIt | None = None


def _markdown() -> MarkdownIt:
    """CommonMark, with GitHub's tables and strikethrough (as Claude Code reads Markdown)."""
    global _parser
    if _parser is None:
        from markdown_it import MarkdownIt

        _parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    return _parser


def _tokens(text: str) -> list[Token]:
    # a byte-order mark opens the file, not its first line
    return _markdown().parse(text[1:] if text.startswith("\ufeff") else text)


def lines(text: str) -> list[str]:
    """The lines of `text`, each with its break, as CommonMark breaks them."""
    found, at = [], 0
    for brk in _BREAK.finditer(text):
        found.append(text[at : brk.end()])
        at = brk.end()
    if at < len(text):
        found.append(text[at:])
    return found


def html_lines(text: str) -> dict[int, str]:
    """The lines of `text` that are an HTML block of their own at the top level (not in a list,
    a quote or code), by line number, stripped: where a marker may be."""
    return {
        token.map[0]: token.content.strip(" \t\r\n")
        for token in _tokens(text)
        if token.type == "html_block" and token.level == 0 and token.map and token.map[1] - token.map[0] == 1
    }


class Heading(NamedTuple):
    level: int
    title: str
    last: int  # its last line (a setext heading's underline)


def headings(text: str) -> dict[int, Heading]:
    """The headings of `text` (ATX and setext, wherever they stand but in code), by first line."""
    found: dict[int, Heading] = {}
    tokens = _tokens(text)
    for opening, inline in itertools.pairwise(tokens):
        if opening.type == "heading_open" and opening.map:
            found[opening.map[0]] = Heading(int(opening.tag[1]), inline.content.strip(), opening.map[1] - 1)
    return found


class Prose(NamedTuple):
    """A text's words as a reader of prose takes them, in two strings of the same length: `plain`
    with its inline code as written, `masked` with each inline code span as underscores."""

    masked: str
    plain: str

    @property
    def words(self) -> str:
        """The prose without its code."""
        return " ".join(self.masked.replace("_", " ").split()) if "`" in self.plain else self.plain


def prose(text: str) -> Prose:
    """The prose of `text`: its blocks of text a line apart, fenced and indented code left out,
    inline code masked, emphasis, strikethrough and the syntax of links and images dropped
    (their words kept)."""
    masked: list[str] = []
    plain: list[str] = []
    for token in _tokens(text):
        if token.type == "html_block":  # a tag a prompt wraps its words in is no code
            masked.append(token.content.rstrip("\n") + "\n")
            plain.append(token.content.rstrip("\n") + "\n")
        elif token.type == "inline":
            for said, shown in _inline(token.children or []):
                masked.append(said)
                plain.append(shown)
            masked.append("\n")
            plain.append("\n")
    return Prose("".join(masked).rstrip("\n"), "".join(plain).rstrip("\n"))


def _inline(children: list[Token]) -> Iterator[tuple[str, str]]:
    for child in children:
        if child.type == "code_inline":
            written = f"{child.markup}{child.content}{child.markup}"
            yield "_" * len(written), written
        elif child.type in ("softbreak", "hardbreak"):
            yield "\n", "\n"
        elif child.type in ("text", "html_inline"):
            yield child.content, child.content
        elif child.type == "image":
            yield from _inline(child.children or [])


# The longest an inert line may be: a memory longer is not atomic, and cutting it is not verbatim.
LONGEST = 240
# What could open a construct inside a line of text: an HTML tag or comment, or an autolink (<),
# a link or an image ([), a backslash escape, a code span (`); and an entity (&name;).
_ESCAPED = frozenset("<[\\`")
_ENTITY = re.compile(r"&(?=#?\w+;)")
# A line starting so opens a block: a heading, a quote, a list, a code fence, a table row.
_OPENS_BLOCK = re.compile(r"[#>+\-*=|~]|(\d{1,9})([.)])")
# Programs whose name starts a command (none an English word: "make sure", "find the bug" are
# prose): the name and its next word, then every word that looks like code, are its command.
_PROGRAMS = frozenset((
    "sh", "bash", "zsh", "ksh", "curl", "wget", "python", "python3", "pip", "pip3", "pipx", "uv", "uvx",
    "poetry", "node", "npm", "npx", "pnpm", "yarn", "bun", "deno", "git", "docker", "podman", "kubectl",
    "helm", "cmake", "cargo", "rustc", "mvn", "gradle", "iex", "erl", "composer", "dotnet", "terraform",
    "ansible", "ssh", "scp", "rsync", "rm", "mv", "cp", "chmod", "chown", "sudo", "systemctl",
    "powershell", "pwsh", "nohup", "pytest", "ruff", "mypy", "tox", "nox", "jest", "vitest", "tsc",
    "eslint", "prettier", "brew", "apt-get", "dnf", "yum", "pacman", "xargs",
))  # fmt: skip
# a word only code holds: a path, a flag, a URL, a variable, an operator, an @ word, a script
_CODE_LIKE = re.compile(
    r"[/\\|$<>={}\[\]@`]|&&|^-|^\.|\.(?:sh|py|js|ts|ps1|exe|bat)$|://|^www\.", re.IGNORECASE
)
_CLAUSE_END = ".,;:!?)"
_OPERATORS = frozenset(["|", "||", "&&", ";", "&"])
_ENDS_COMMAND = frozenset(
    ["and", "or", "then", "before", "after", "to", "when", "while", "if", "unless", "so", "but", "because"]
)


def inert(text: str) -> str | None:
    """`text` as one line of inert Markdown (see the module's docstring), its words kept in their
    order; None when it cannot be one: empty, longer than LONGEST once written, or not read back
    as plain text and code spans only."""
    words = " ".join(_visible(text).split())
    if not words:
        return None
    pieces = _importing_nothing(_joined(_pieces(words)))
    written = _unblocked("".join(_written(piece, kind) for piece, kind in pieces))
    return written if len(written) <= LONGEST and is_inert(written) else None


def _visible(text: str) -> str:
    """`text` without the controls that would hide or reorder what follows them: bidirectional
    overrides and isolates, and other control characters (a tab or a break is a space)."""
    return "".join(
        " " if char in "\t\n\r\x0b\x0c" else char
        for char in text
        if char not in BIDI_CONTROLS and (char >= " " or char in "\t\n\r\x0b\x0c") and char != "\x7f"
    )


Piece = Literal["text", "code", "span"]


def _pieces(words: str) -> Iterator[tuple[str, Piece]]:
    """`words` cut into pieces: the code spans it has ("span"), as CommonMark pairs backticks, and
    in its text the commands, paths, URLs and `@` words ("code") and the rest ("text")."""
    at = 0
    for start, end in _code_spans(words):
        yield from _commands(words[at:start])
        yield words[start:end], "span"
        at = end
    yield from _commands(words[at:])


def _joined(pieces: Iterator[tuple[str, Piece]]) -> list[tuple[str, Piece]]:
    """`pieces` with code that touches code made one piece of code: two code spans side by side
    would run their backticks together."""
    joined: list[tuple[str, Piece]] = []
    for piece, kind in pieces:
        if joined and kind != "text" and joined[-1][1] != "text":
            joined[-1] = (joined[-1][0] + piece, "code")
        elif piece:
            joined.append((piece, kind))
    return joined


# Claude Code loads the file an `@` names wherever one follows a space or starts a line in a list
# item's raw text, code spans included (it skips code spans in paragraphs only): what an `@`
# follows there must be a backtick
_IMPORT = re.compile(r"(?:^|\s)@")
_BEFORE_AT = re.compile(r"(\s+)(?=@)")


def _importing_nothing(pieces: list[tuple[str, Piece]]) -> list[tuple[str, Piece]]:
    """`pieces` with each piece of code that holds an `@` after a space cut there: the space
    outside code, the `@` opening a code span of its own."""
    cut: list[tuple[str, Piece]] = []
    for piece, kind in pieces:
        content = _span_content(piece) if kind == "span" else piece
        if kind == "text" or not _BEFORE_AT.search(content):
            cut.append((piece, kind))
            continue
        for n, part in enumerate(_BEFORE_AT.split(content)):
            if part:
                cut.append((part, "text" if n % 2 else "code"))
    return cut


def _span_content(span: str) -> str:
    """What a code span holds, as CommonMark reads it: inside its backticks, one space each side
    taken off when both are there (and it is not all spaces)."""
    fence = len(span) - len(span.lstrip("`"))
    content = span[fence:-fence]
    if len(content) > 1 and content[0] == " " and content[-1] == " " and content.strip(" "):
        return content[1:-1]
    return content


def _code_spans(text: str) -> Iterator[tuple[int, int]]:
    """Where `text`'s code spans are, as CommonMark finds them: a run of backticks opens one that
    the next run of the same length closes (a run never closed is text); a backtick escaped by a
    backslash opens nothing."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", text)]
    i = 0
    while i < len(runs):
        start, end = runs[i]
        if _escaped_at(text, start):
            start += 1
        closing = next((j for j in range(i + 1, len(runs)) if runs[j][1] - runs[j][0] == end - start), None)
        if end == start or closing is None:
            i += 1
            continue
        yield start, runs[closing][1]
        i = closing + 1


def _escaped_at(text: str, at: int) -> bool:
    before = text[:at]
    return (len(before) - len(before.rstrip("\\"))) % 2 == 1


def _commands(text: str) -> Iterator[tuple[str, Piece]]:
    """`text` cut into its words and its code: every word that looks like code (a path, a flag, a
    URL, an `@` word...), and a command: a program's name (see _PROGRAMS) to the last word of its
    clause that looks like code, and the word after each operator (`| sh`). A program named with
    nothing that looks like code after it is a word ("use pnpm, not npm")."""
    tokens: list[tuple[str, str]] = []  # (text, "space" | "word" | "end"): an end closes a clause
    for part in re.split(r"( +)", text):
        bare = part.rstrip(_CLAUSE_END)
        if part.isspace():
            tokens.append((part, "space"))
        elif part:
            tokens += [(bare, "word")] if bare else []
            tokens += [(part[len(bare) :], "end")] if bare != part else []
    code = [kind == "word" and bool(_CODE_LIKE.search(said)) for said, kind in tokens]
    for start, (said, kind) in enumerate(tokens):
        if kind == "word" and said.lower() in _PROGRAMS:
            last = _command_end(tokens, start)
            for at in range(start, last + 1):
                code[at] = code[at] or (last > start and tokens[at][1] == "word")
    yield from _runs([(said, is_code) for (said, _), is_code in zip(tokens, code, strict=True)])


def _command_end(tokens: list[tuple[str, str]], start: int) -> int:
    """Where the command whose program's name is at `start` ends: its clause's last word that looks
    like code, or follows an operator; `start` when none does."""
    last, after_operator = start, False
    for at in range(start + 1, len(tokens)):
        said, kind = tokens[at]
        if kind == "end" or (kind == "word" and said.lower() in _ENDS_COMMAND):
            break
        if kind == "word":
            if after_operator or _CODE_LIKE.search(said):
                last = at
            after_operator = said in _OPERATORS
    return last


def _runs(marked: list[tuple[str, bool]]) -> Iterator[tuple[str, Piece]]:
    """`marked` as pieces: each run of code words, with the spaces between them, one piece of
    code; each run of the rest one piece of text."""
    pieces: list[tuple[str, Piece]] = []
    spaces = ""
    for word, is_code in marked:
        if not word or word.isspace():
            spaces += word
            continue
        kind: Piece = "code" if is_code else "text"
        if pieces and pieces[-1][1] == kind:
            pieces[-1] = (pieces[-1][0] + spaces + word, kind)
        else:
            pieces += [(spaces, "text"), (word, kind)] if spaces else [(word, kind)]
        spaces = ""
    yield from pieces
    if spaces:
        yield spaces, "text"


def _written(piece: str, kind: Piece) -> str:
    if kind == "span":  # a code span already: kept as written
        return piece
    if kind == "text":
        return _ENTITY.sub(r"\\&", "".join("\\" + char if char in _ESCAPED else char for char in piece))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", piece)), default=0) + 1)
    # a space keeps a backtick of the code off the fence's (CommonMark takes one off each side
    # when both have one); none before an `@`, which Claude Code would read as an import
    before = " " if piece.startswith("`") else ""
    after = " " if piece.endswith("`") else ""
    return f"{fence}{before}{piece}{after}{fence}"


def _unblocked(line: str) -> str:
    """`line` with the mark that would open a block at its start escaped."""
    opens = _OPENS_BLOCK.match(line)
    if opens is None:
        return line
    if opens.group(1):  # "1. " or "1) ": a list
        return opens.group(1) + "\\" + line[opens.end(1) :]
    return "\\" + line


def is_inert(line: str) -> bool:
    """Whether `line`, as a list item's text, reads as plain text and code spans only (emphasis
    and strikethrough allowed: they change no meaning), with no `@` word, URL or HTML outside
    code, and no `@` after a space or at its start even inside code (Claude Code reads a list
    item's raw text for its imports)."""
    if _IMPORT.search(line):
        return False
    tokens = _tokens(f"- {line}\n")
    kinds = [token.type for token in tokens]
    if kinds != [
        "bullet_list_open", "list_item_open", "paragraph_open", "inline", "paragraph_close",
        "list_item_close", "bullet_list_close",
    ]:  # fmt: skip
        return False
    allowed = ("code_inline", "em_open", "em_close", "strong_open", "strong_close", "s_open", "s_close")
    for child in tokens[3].children or []:
        if child.type == "text" and re.search(r"@\S|://|www\.", child.content, re.IGNORECASE):
            return False
        if child.type != "text" and child.type not in allowed:
            return False
    return True
