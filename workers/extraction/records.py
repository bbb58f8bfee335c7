"""What the agent writes on the command line to record its own work: pull requests and issues it
files (`gh pr create`, `gh issue create`, `glab mr create`, `bd create`) and the reasons it
gives when it closes one (`bd close ID --reason ...`, `gh issue close ... --comment`).

Only commands that ran (`tool.used`) count, each read once, whole (a body written as a heredoc
included), and only their words: the title, the body or reason, cut to a paragraph.
"""

import re
import shlex
from collections.abc import Iterable, Iterator

import msgspec

from schemas.events import Event
from schemas.text.harness import unmarked
from workers.evidence.tool_uses import tool_uses

_MAX = 400
_HEREDOC = re.compile(r"\$\(cat <<-?\s*'?(?P<tag>\w+)'?\n(?P<text>.*?)\n\s*(?P=tag)\s*\n?\s*\)", re.S)
# (program, subcommand words) -> what the record is
_FILED = {
    ("gh", "pr", "create"): "Pull request",
    ("glab", "mr", "create"): "Merge request",
    ("gh", "issue", "create"): "Issue filed",
    ("bd", "create"): "Issue filed",
}
_CLOSED = {("bd", "close"), ("gh", "issue", "close"), ("gh", "pr", "close")}
_TITLE = ("--title", "-t")
_BODY = ("--body", "-b", "--description", "-d")
_REASON = ("--reason", "-r", "--comment", "-c")


class Record(msgspec.Struct, frozen=True):
    what: str  # "Pull request", "Issue filed", "Closed spotter-a0y.1"
    text: str
    event_id: str


def records(events: Iterable[Event]) -> Iterator[Record]:
    """Every pull request, issue and closing reason the commands among `events` wrote."""
    for use in tool_uses(events):
        command = use.given.get("command")
        if use.failed or use.name != "Bash" or not isinstance(command, str):
            continue
        for words in _commands(command):
            if (found := _record(words)) is not None:
                what, text = found
                yield Record(what, text, use.event.id)


def _commands(command: str) -> Iterator[list[str]]:
    """The simple commands of a shell line, as words; a heredoc body as one word."""
    bodies: list[str] = []

    def hold(found: re.Match[str]) -> str:
        bodies.append(found["text"])
        return f"__body{len(bodies) - 1}__"

    lexer = shlex.shlex(_HEREDOC.sub(hold, command), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: no command to trust
        return
    words: list[str] = []
    for token in [*tokens, ";"]:
        if token and set(token) <= set("&|;()<>"):
            if words:
                yield [re.sub(r"__body(\d+)__", lambda m: bodies[int(m[1])], w) for w in words]
            words = []
        else:
            words.append(token)


def _record(words: list[str]) -> tuple[str, str] | None:
    program = words[0].rsplit("/", 1)[-1] if words else ""
    positional = [w for w in words[1:] if not w.startswith("-")]
    options = _options(words[1:])
    for key, what in _FILED.items():
        if (program, *positional[: len(key) - 1]) == key:
            title = options.get(_TITLE) or (positional[len(key) - 1] if len(positional) >= len(key) else "")
            body = options.get(_BODY, "")
            return (what, _said(title, body)) if title else None
    for key in _CLOSED:
        if (program, *positional[: len(key) - 1]) == key and (reason := options.get(_REASON)):
            target = positional[len(key) - 1] if len(positional) >= len(key) else ""
            return f"Closed {target}".strip(), _said(reason, "")
    return None


def _options(words: list[str]) -> dict[tuple[str, ...], str]:
    """Each option's value (`--title X` or `--title=X`), keyed by the option family it is in."""
    found: dict[tuple[str, ...], str] = {}
    for n, word in enumerate(words):
        name, _, value = word.partition("=")
        if not value and n + 1 < len(words):
            value = words[n + 1]
        for family in (_TITLE, _BODY, _REASON):
            if name in family and family not in found:
                found[family] = value
    return found


def _said(title: str, body: str) -> str:
    text = " ".join(unmarked(title).split())
    if body := " ".join(unmarked(body).split()):
        text = f"{text}: {body}"
    return text if len(text) <= _MAX else text[: _MAX - 1] + "…"
