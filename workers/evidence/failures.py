"""What a session's commands say of its errors: each failure, by a normalized signature, and
what fixed it: a later success of the same command (it passed: a run that failed otherwise is
no success), the fix being the edits and commands in between.

A command failed when Claude Code says so (`tool.failed`, "Exit code 1"), or when a test or
build run's output says so though its exit status was lost to a pipe (`pytest ... | tail`).
The same command is the same program and subcommand (`git commit -m ...` is `git commit`,
`cd app && uv run pytest -x | tail` is `pytest`). A signature is the line of the output that
names the error, with its numbers, paths and quoted values made placeholders, so the same error
met twice is one `error_pattern` entity.
"""

import contextlib
import re
import shlex
from collections.abc import Iterable, Iterator

import msgspec

from schemas.events import Event
from schemas.text.harness import cancelled, clean
from workers.evidence.tool_uses import tool_uses

_EDITS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}
# what runs a program rather than being one
_RUNNERS = {"uv", "poetry", "pipenv", "npx", "pnpx", "bunx", "sudo", "time", "env", "exec", "nice"}
_RUNNER_VERBS = {"run", "exec"}
_SUBCOMMANDED = {
    "git", "mix", "npm", "pnpm", "yarn", "bun", "cargo", "go", "make", "docker", "kubectl", "gh",
    "dotnet", "gradle", "mvn", "rails", "bundle", "python", "python3", "pip", "uv", "deno",
}  # fmt: skip
# the commands that check the work: tests, builds, linters, type checkers
CHECKS = re.compile(
    r"^(?:pytest|jest|vitest|tox|ruff|mypy|tsc|eslint|mix (?:test|compile|credo|dialyzer|format)|"
    r"cargo (?:test|build|check|clippy)|go (?:test|build|vet)|npm (?:test|run)|pnpm (?:test|run)|"
    r"yarn (?:test|run)|make|python -m|python3 -m|gradle|mvn|dotnet (?:test|build))\b"
)
# a run whose output says it failed, though its status was lost to a pipe
_FAILED_OUTPUT = re.compile(
    r"(?m)^(?:FAILED |ERROR |=+ .*\b[1-9]\d* (?:failed|errors?)\b|.*\b[1-9]\d* (?:tests? )?fail(?:ed|ures?)\b"
    r"|error(?:\[E\d+\])?: |\*\* \(\w+Error\)|Traceback \(most recent call last\))"
)
# the lines that name an error, best first: an exception, a checker's tagged finding, a
# compiler's or git's error, a test that failed, any line that says something failed
_ERROR_LINES = [
    re.compile(r"^\[?(?:\*\* \(\w+\)|(?!Error: )[\w.]*(?:Error|Exception)\b)"),  # [TypeError: ...] too
    re.compile(r"^\[[A-Z]{1,12}\] \S"),
    re.compile(r"^\[[A-Z]{2,12}\]$"),  # a checker's name alone: [DIALYZER]
    re.compile(r"^(?:error(?:\[\w+\])?:|fatal:|FAILED )", re.IGNORECASE),
    re.compile(
        r"\b(?:failed|failure|not found|denied|refused|timed out|undefined|cannot|error occurred)\b",
        re.IGNORECASE,
    ),
]
_FEEDERS = frozenset(["yes", "echo", "printf", "cat"])  # what only feeds a program its input
_FILTERS = frozenset(
    ["tail", "head", "grep", "less", "more", "tee", "sort", "uniq", "wc", "cut", "awk", "sed"]
)
_LINE_LEAD = re.compile(r"^[^\w\[*(]*(?:E\s{2,})?")  # indentation, box drawing, arrows, pytest's "E   "
_EXIT_CODE = re.compile(r"^(?:Error: )?Exit code \d+\s*", re.IGNORECASE)
_PLACEHOLDERS = [
    (re.compile(r"(?:[\w.~-]*/)+[\w.-]+"), "<path>"),
    (re.compile(r"'[^'\n]{1,200}'|\"[^\"\n]{1,200}\"|`[^`\n]{1,200}`"), "<value>"),
    (re.compile(r"\b0x[0-9a-f]+\b|\b[0-9a-f]{7,40}\b", re.IGNORECASE), "<hex>"),
    (re.compile(r"(?<![A-Za-z])\d+(?![A-Za-z])"), "N"),  # a count, a line, a port; not a name's digit
    (re.compile(r"\s+"), " "),
]
_SIGNATURE_MAX = 160
_AS_RUN_MAX = 80
# commands that look, note or stage, and fix nothing
_LOOKS = frozenset({
    "git status", "git log", "git diff", "git show", "git add", "git branch", "ls", "cat", "grep", "rg",
    "find", "echo", "head", "tail", "pwd", "which", "wc", "bd", "sleep",
})  # fmt: skip
_SHOWN_ONLY = re.compile(r"\s*(?:\d?>&\d|\d?>\s*/dev/null|\|\s*(?:tail|head|grep|less|tee)\b.*$)")


class Run(msgspec.Struct, frozen=True):
    """A command the session ran: its key, whether it failed, what it printed."""

    event_id: str
    key: str
    command: str
    failed: bool
    output: str


class Fixed(msgspec.Struct, frozen=True):
    """A failure, and what the session did before the same command passed (`then`: that run;
    None if it never passed again in the session)."""

    failure: Run
    signature: str
    then: Run | None
    edited: tuple[str, ...]
    ran: tuple[str, ...]  # the commands run in between, and the one that ran instead, if it changed
    between: tuple[str, ...]  # the events of the fix: its edits and commands, and the run after it


def command_key(command: str) -> str:
    """The program (and its subcommand) a shell command runs: its last pipeline stage that is not
    a filter of the output, past `cd`, variables and runners."""
    first_line = command.strip().split("\n", 1)[0]  # what follows is a heredoc's or a script's
    stages = [s.strip() for s in re.split(r"&&|\|\||;", first_line) if s.strip()]
    for stage in reversed(stages):
        words = _words(_fed(stage))
        while words and ("=" in words[0] or words[0] in _RUNNERS or words[0] in _RUNNER_VERBS):
            words = words[1:]
        if not words or words[0] in ("cd", "echo", "export", "source", "."):
            continue
        program = _unversioned(words[0].rsplit("/", 1)[-1])
        rest = [w for w in words[1:] if not w.startswith("-")]
        return f"{program} {rest[0]}" if program in _SUBCOMMANDED and rest else program
    return ""


def _unversioned(program: str) -> str:
    """A program as npx names it, without the version asked for: `create-next-app@latest`."""
    name, _, _ = program[1:].partition("@")
    return program[0] + name if program else program


def _fed(stage: str) -> str:
    """The command of a pipeline stage that runs it: its first, unless that only feeds the next
    (`yes "" | npx create-next-app ...`, `echo y | apt install ...`) one that is no filter."""
    piped = [p.strip() for p in stage.split("|")]
    feeding = _words(piped[0])[:1]
    if len(piped) > 1 and feeding and feeding[0] in _FEEDERS:
        after = _words(piped[1])[:1]
        if after and after[0] not in _FILTERS:
            return piped[1]
    return piped[0]


def _words(stage: str) -> list[str]:
    try:
        return shlex.split(stage)
    except ValueError:  # an unclosed quote: words as they come
        return stage.split()


def runs(events: Iterable[Event]) -> Iterator[Run]:
    """Every shell command among `events`, in order."""
    for use in tool_uses(events):
        command = use.given.get("command")
        if use.name != "Bash" or not isinstance(command, str) or not (key := command_key(command)):
            continue
        output = output_of(use.payload.get("error") if use.failed else use.payload.get("tool_response"))
        if cancelled(output):
            continue  # Claude Code cancelled it, or the user said no: nothing ran
        hidden = bool(CHECKS.match(key)) and bool(_FAILED_OUTPUT.search(output))
        yield Run(use.event.id, key, command, use.failed or hidden, output)


def output_of(response: object) -> str:
    """What a command's response or error says, cleaned: its stdout and stderr when it has them.
    An error the projections hold as text (the `errors` table: a dict as JSON) reads alike; any
    other text stays as it is, JSON or not."""
    if isinstance(response, str) and response.startswith("{"):
        with contextlib.suppress(msgspec.DecodeError):
            decoded = msgspec.json.decode(response)
            if isinstance(decoded, dict) and ("stdout" in decoded or "stderr" in decoded):
                response = decoded
    if isinstance(response, dict):
        response = "\n".join(str(response.get(k) or "") for k in ("stdout", "stderr"))
    return clean(response) if isinstance(response, str) else ""


def error_line(output: str) -> str:
    """The line of a failure's output that names its error, as it was (see the module's
    docstring): what a lesson quotes."""
    text = _EXIT_CODE.sub("", output.replace("\\n", "\n"))
    lines = [bare for raw in text[:20_000].splitlines() if (bare := _LINE_LEAD.sub("", raw).strip())]
    ranked = (line for pattern in _ERROR_LINES for line in lines if pattern.search(line))
    return next(ranked, lines[0] if lines else "")


def signature(output: str) -> str:
    """What names a failure, whichever run met it: its error line with numbers, paths and quoted
    values made placeholders (see the module's docstring)."""
    line = error_line(output)
    for pattern, placeholder in _PLACEHOLDERS:
        line = pattern.sub(placeholder, line)
    return line.strip()[:_SIGNATURE_MAX]


def fixes(events: list[Event]) -> Iterator[Fixed]:
    """Each failure of `events` (one session's, in order), and what fixed it if anything did: the
    next run of the same command that passed, the fix being what was done in between. A fix is
    only a fix once its check passed: a run that still failed, however otherwise, fixes nothing
    (`then` stays None until one passes). A failure the next run meets again is that run's to
    fix."""
    ordered = sorted(events, key=lambda e: (e.ts, e.id))
    at = {e.id: i for i, e in enumerate(ordered)}
    all_runs = list(runs(ordered))
    for n, run in enumerate(all_runs):
        if not run.failed or not (said := signature(run.output)):
            continue
        later = [r for r in all_runs[n + 1 :] if r.key == run.key]
        if later and later[0].failed and signature(later[0].output) == said:
            continue
        passed = next((r for r in later if not r.failed), None)
        if passed is None:
            yield Fixed(run, said, None, (), (), ())
            continue
        window = ordered[at[run.event_id] + 1 : at[passed.event_id]]
        edits = [u for u in tool_uses(window) if u.name in _EDITS]
        ran = [r for r in runs(window) if r.key != run.key and r.key not in _LOOKS]
        edited = tuple(dict.fromkeys(p for u in edits if isinstance(p := u.given.get("file_path"), str)))
        commands = tuple(dict.fromkeys(_first_line(r.command) for r in ran))
        if passed.command != run.command:
            commands += (_first_line(passed.command),)
        between = tuple(
            dict.fromkeys([*(u.event.id for u in edits), *(r.event_id for r in ran), passed.event_id])
        )
        yield Fixed(run, said, passed, edited, commands, between)


def as_run(run: Run) -> str:
    """The command as a lesson names it: as it was run (its first line, without what filters its
    output), or its key when that line is long or a heredoc's."""
    line = _first_line(run.command)
    return line if len(line) <= _AS_RUN_MAX and "<<" not in line else run.key


def _first_line(command: str) -> str:
    """A command as the fix names it: its first line, without what filters or redirects its output."""
    shown = _SHOWN_ONLY.sub("", command.strip().split("\n", 1)[0])
    return shown.strip()[:120]
