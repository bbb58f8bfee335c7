"""What a session showed and said, as passages recall can give: deterministic, no model.

A tool use becomes what was run or opened and what it showed: a command with its exit status and
the lines that matter (errors, test summaries, its last lines), then the rest of a long output; a
file read or written with its path and its text; an edit with its path and the new text; a search
with its pattern and its hits; a page fetched with its address and what was read of it; what the
user answered a question; a subagent's report. What the agent said mid-turn is cut the same way.

Each passage is at most PASSAGE_CHARS characters (the embedding model reads about that many
whole), on line boundaries where lines allow, and starts with a heading that says where it comes
from ("Read assets/package.json"): a passage read on its own still says what it is. The same
content read ten times gives the same passages (the projection keeps each once); a whole file's
passages carry its `key`, so a newer version of the file replaces them.
"""

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

import msgspec

PASSAGE_CHARS = 800
MAX_PASSAGES = 24  # of one tool use: about 19k characters of a file or an output (the rest is cut)
_SUMMARY_LINES = 12  # the lines that matter of a command's output
_LAST_LINES = 4
_LINE_CHARS = 240  # a line of a summary is cut here
_HITS = 30  # a search's hits shown
# a line of a command's output that says how it went: an error, a test run's summary
_MATTERS = re.compile(
    r"(?i)\b(?:error|errors|exception|traceback|fail(?:ed|ure|ures|s)?|fatal|panic|denied|refused|"
    r"timed out|not found|cannot|unable|invalid|warning|passed|passing|skipped|tests?\b|ok\b|"
    r"compiled|finished|done|success(?:ful)?|exit(?:ed)? (?:code|status))"
)
# Read's text as Claude Code shows it to the model: each line numbered, "    12→text"
_NUMBERED = re.compile(r"^ *\d+[→\t]", re.MULTILINE)
_EXIT_CODE = re.compile(r"^Exit code (\d+)", re.MULTILINE)
# a sentence that only says what the agent is about to do, and how short all of them must be
_FILLER = r"(?:now|next|first|then|so|ok(?:ay)?|great|good|perfect|excellent|alright|all right)\b[,!.]?\s*"
_NARRATION = re.compile(
    rf"(?i)\s*(?:{_FILLER})*(?:(?:let me|let's|let us|i'll|i will|i need to|i'm going to|i am going to"
    r"|i should|now i)\b|$)"
)
# a short sentence that announces what follows it ("Now add spans to join:", "Commit and close:"):
# the tool use after it shows what was done
_ANNOUNCES = re.compile(r".{1,60}:")
_SENTENCES = re.compile(r"(?<=[.!?:])\s+|\n+")
_NARRATION_CHARS = 300


class Passage(msgspec.Struct, frozen=True):
    action: str  # read, wrote, edited, ran, searched, fetched, looked up, answered, reported, planned,
    # failed, used (any other tool), said
    source: str  # the path, command, pattern or address; "" for what was said
    key: str  # what a newer version replaces ("file:<path>" for a whole file's text); "" for none
    version: str  # a digest of everything this use showed of its source
    part: int
    text: str  # the heading line, then the passage's own text


def tool_passages(payload: dict[str, Any], failed: bool) -> list[Passage]:
    """The passages of one tool use's event payload (tool.used, or tool.failed when `failed`)."""
    tool, cwd = _string(payload.get("tool_name")), _string(payload.get("cwd"))
    given = payload.get("tool_input")
    given = given if isinstance(given, dict) else {}
    answer = payload.get("error") if failed else payload.get("tool_response")
    reader = _TOOLS.get(tool)
    if reader is None:
        return _other(tool, given, answer, failed)
    if failed and tool != "Bash":
        return _failed(tool, given, answer, cwd)
    return reader(given, answer, failed, cwd)


def said_passages(text: str) -> list[Passage]:
    """What the agent said, as passages of its own words (no heading: the block says who spoke);
    none for words that only say what it is about to do ("Now let me check the tests.", "Commit
    and close:"), which tell nothing the tool use after them does not show."""
    if len(text) <= _NARRATION_CHARS and all(
        _NARRATION.match(sentence) or _ANNOUNCES.fullmatch(sentence.strip())
        for sentence in _SENTENCES.split(text.strip())
        if sentence.strip()
    ):
        return []
    return _cut("said", "", "", "", _plain(text))


def _relative(path: str, cwd: str) -> str:
    """`path` as the session saw it from its folder, when it lies inside."""
    root = cwd.rstrip("/\\")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] in ("/", "\\"):
        return path[len(root) + 1 :]
    return path


def _read(given: dict[str, Any], answer: Any, failed: bool, cwd: str) -> list[Passage]:
    path = _string(given.get("file_path")) or _string(given.get("notebook_path"))
    if failed or not path:
        return _other("Read", given, answer, failed)
    file = answer.get("file") if isinstance(answer, dict) else None
    if isinstance(file, dict) and isinstance(file.get("content"), str):
        text = file["content"]
        start, lines, total = file.get("startLine"), file.get("numLines"), file.get("totalLines")
        whole = start in (None, 1) and (lines is None or total is None or lines >= total)
    else:
        text = _NUMBERED.sub("", _plain(answer))
        whole = given.get("offset") is None and given.get("limit") is None
    shown = _relative(path, cwd)
    if not whole:
        first = given.get("offset") or (file or {}).get("startLine") or 1
        return _cut("read", f"{shown} (from line {first})", "", "", text)
    return _cut("read", shown, f"file:{path}", "", text)


def _write(given: dict[str, Any], answer: Any, failed: bool, cwd: str) -> list[Passage]:
    path, text = _string(given.get("file_path")), _string(given.get("content"))
    if failed or not path:
        return _other("Write", given, answer, failed)
    return _cut("wrote", _relative(path, cwd), f"file:{path}", "", text)


def _edit(given: dict[str, Any], answer: Any, failed: bool, cwd: str) -> list[Passage]:
    path = _string(given.get("file_path")) or _string(given.get("notebook_path"))
    many = given.get("edits")
    edits = [e for e in many if isinstance(e, dict)] if isinstance(many, list) else [given]
    texts = (_string(e.get("new_string")) or _string(e.get("new_source")) for e in edits)
    new = "\n…\n".join(t for t in texts if t)
    if failed or not path or not new:
        return _other("Edit", given, answer, failed)
    return _cut("edited", _relative(path, cwd), f"edit:{path}", "", new)


def _bash(given: dict[str, Any], answer: Any, failed: bool, cwd: str) -> list[Passage]:
    command = " ".join(_string(given.get("command")).split())
    if not command:
        return _other("Bash", given, answer, failed)
    if isinstance(answer, dict):
        streams = (_string(answer.get("stdout")), _string(answer.get("stderr")))
        output = "\n".join(s for s in streams if s.strip())
        interrupted = answer.get("interrupted") is True
    else:
        output, interrupted = _plain(answer), False
    code = _EXIT_CODE.search(output) if failed else None
    status = "interrupted" if interrupted else f"exit {code.group(1)}" if code else "exit 0"
    status = "failed" if failed and not code else status
    source = f"{_short(command, 300)} ({status})"
    return _cut("ran", source, "", "", _matters(output), rest=output)


def _search(given: dict[str, Any], answer: Any, failed: bool, cwd: str) -> list[Passage]:
    pattern = _string(given.get("pattern"))
    where = _string(given.get("path")) or _string(given.get("glob"))
    if failed or not pattern:
        return _other("Search", given, answer, failed)
    source = f"{pattern} in {_relative(where, cwd)}" if where else pattern
    if isinstance(answer, dict):
        content = _string(answer.get("content"))
        files = answer.get("filenames")
        files = files[:_HITS] if isinstance(files, list) else []
        hits = content or "\n".join(_relative(f, cwd) for f in files if isinstance(f, str)) or "no match"
    else:
        hits = _plain(answer)
    return _cut("searched", source, "", "", hits)


def _fetch(given: dict[str, Any], answer: Any, failed: bool, cwd: str) -> list[Passage]:
    url = _string(given.get("url"))
    if failed or not url:
        return _other("WebFetch", given, answer, failed)
    if isinstance(answer, dict) and isinstance(answer.get("result"), str):
        text = answer["result"]
    else:
        text = _plain(answer)
    return _cut("fetched", url, "", "", text)


def _web_search(given: dict[str, Any], answer: Any, failed: bool, cwd: str) -> list[Passage]:
    query = _string(given.get("query"))
    results = answer.get("results") if isinstance(answer, dict) else None
    text = "\n".join(_links(results)) if isinstance(results, list) else _plain(answer)
    return _cut("looked up", query, "", "", text) if query else _other("WebSearch", given, answer, failed)


def _links(results: list[Any]) -> Iterator[str]:
    for result in results:
        if isinstance(result, str):
            yield result
        elif isinstance(result, dict):
            for item in result.get("content") or []:
                if isinstance(item, dict) and item.get("title"):
                    yield f"{item['title']} ({item.get('url', '')})"


def _asked(given: dict[str, Any], answer: Any, failed: bool, cwd: str) -> list[Passage]:
    answers = answer.get("answers") if isinstance(answer, dict) else None
    if failed or not isinstance(answers, dict) or not answers:
        return _other("AskUserQuestion", given, answer, failed)
    text = "\n".join(f"{q} {a}" for q, a in answers.items())
    return _cut("answered", "the user's answers", "", "", text)


def _task(given: dict[str, Any], answer: Any, failed: bool, cwd: str) -> list[Passage]:
    what = _string(given.get("description")) or _short(_string(given.get("prompt")), 120)
    content = answer.get("content") if isinstance(answer, dict) else answer
    text = _plain(content)
    if failed or not text:
        return _other("Task", given, answer, failed)
    return _cut("reported", f"a subagent, on {what}" if what else "a subagent", "", "", text)


def _plan(given: dict[str, Any], answer: Any, failed: bool, cwd: str) -> list[Passage]:
    plan = _string(given.get("plan")) or (_string(answer.get("plan")) if isinstance(answer, dict) else "")
    if failed or not plan:
        return []
    return _cut("planned", "the plan", "", "", plan)


def _failed(tool: str, given: dict[str, Any], answer: Any, cwd: str) -> list[Passage]:
    """A known tool that failed: what it was asked to do, and the error."""
    target = next((_string(given.get(f)) for f in _TARGETS if _string(given.get(f))), "")
    target = _short(" ".join(_relative(target, cwd).split()), 200)
    return _cut("failed", f"{tool} {target}".strip(), "", "", _plain(answer))


_TARGETS = ("file_path", "notebook_path", "pattern", "url", "query", "description", "command")


def _other(tool: str, given: dict[str, Any], answer: Any, failed: bool) -> list[Passage]:
    """Any other tool (an MCP server's, a newer Claude Code's): its input and what it answered."""
    if tool in _SILENT:
        return []
    asked = _short(" ".join(_plain(given).split()), 200)
    text = _plain(answer)
    if not text.strip():
        return []
    source = f"{tool or 'a tool'}{' ' + asked if asked else ''}{' (failed)' if failed else ''}"
    return _cut("used", source, "", "", text)


_TOOLS = {
    "Read": _read,
    "NotebookRead": _read,
    "Write": _write,
    "Edit": _edit,
    "MultiEdit": _edit,
    "NotebookEdit": _edit,
    "Bash": _bash,
    "Grep": _search,
    "Glob": _search,
    "WebFetch": _fetch,
    "WebSearch": _web_search,
    "AskUserQuestion": _asked,
    "Task": _task,
    "Agent": _task,
    "ExitPlanMode": _plan,
}
# tools whose use shows nothing worth remembering on its own (a to-do list, a wait)
_SILENT = frozenset(
    {"TodoWrite", "TaskOutput", "BashOutput", "KillShell", "KillBash", "Skill", "SlashCommand"}
)

_HEADINGS = {
    "read": "Read",
    "wrote": "Wrote",
    "edited": "Edited",
    "ran": "Ran",
    "searched": "Searched for",
    "fetched": "Fetched",
    "looked up": "Searched the web for",
    "failed": "Failed:",
    "answered": "Asked",
    "reported": "Report of",
    "planned": "Planned",
    "used": "Used",
}


def _cut(action: str, source: str, key: str, version: str, text: str, rest: str = "") -> list[Passage]:
    """`text` (then what of `rest` it does not hold) in passages, each headed by where it comes
    from, MAX_PASSAGES at most."""
    heading = f"{_HEADINGS[action]} {source}:" if action in _HEADINGS else ""
    room = PASSAGE_CHARS - len(heading) - 1
    pieces = _pieces(text.strip(), room)
    if rest.strip() and rest.strip() != text.strip():
        pieces += _pieces(rest.strip(), room)
    if not pieces:
        pieces = [""] if heading else []
    pieces = pieces[:MAX_PASSAGES]
    version = version or _digest(text + "\x1f" + rest)
    return [
        Passage(action, source, key, version, part, f"{heading}\n{piece}".strip() if heading else piece)
        for part, piece in enumerate(pieces)
    ]


def _pieces(text: str, room: int) -> list[str]:
    """`text` in pieces of at most `room` characters, cut between lines where lines allow."""
    pieces: list[str] = []
    current = ""
    for line in text.splitlines():
        while len(line) > room:
            if current:
                pieces.append(current)
                current = ""
            cut = line.rfind(" ", room // 2, room)
            cut = cut if cut > 0 else room
            pieces.append(line[:cut])
            line = line[cut:].lstrip()
        if current and len(current) + 1 + len(line) > room:
            pieces.append(current)
            current = line
        else:
            current = f"{current}\n{line}" if current else line
    if current.strip():
        pieces.append(current)
    return [p for p in (piece.strip("\n") for piece in pieces) if p.strip()]


def _matters(output: str) -> str:
    """The lines of a command's output that say how it went: those that tell an error or a test
    run's summary, and its last lines, in order, each cut to _LINE_CHARS."""
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    if len("\n".join(lines)) <= PASSAGE_CHARS:
        return "\n".join(lines)
    telling = [i for i, line in enumerate(lines) if _MATTERS.search(line)][:_SUMMARY_LINES]
    last = range(max(len(lines) - _LAST_LINES, 0), len(lines))
    kept = sorted(set(telling) | set(last))
    return "\n".join(_short(lines[i], _LINE_CHARS) for i in kept)


def _plain(value: Any) -> str:
    """A tool's answer as text: a string as it is, content blocks' texts, else its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) for b in value):
        texts = [b["text"] for b in value if isinstance(b.get("text"), str)]
        if texts:
            return "\n".join(texts)
    return json.dumps(value, ensure_ascii=False, indent=1)


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()
