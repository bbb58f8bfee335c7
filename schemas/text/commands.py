"""What a shell command runs and what its output says, read one way by the workers (which read
the events) and the projections (which read the tables): the program it runs, whether it checks
the work, the line of a failure that names its error, and that line as a signature.

The same command is the same program and subcommand (`git commit -m ...` is `git commit`,
`cd app && uv run pytest -x | tail` is `pytest`). A signature is the line of the output that
names the error, with its numbers, paths and quoted values made placeholders, so the same error
met twice is one `error_pattern` entity. Standard library only.
"""

import re
import shlex

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
# commands that look, note or stage: they fix nothing, and their failure (grep finding nothing,
# ls of a path that is not there) is an answer, not something that blocks the work
LOOKS = frozenset({
    "git status", "git log", "git diff", "git show", "git add", "git branch", "ls", "cat", "grep", "rg",
    "find", "echo", "head", "tail", "pwd", "which", "wc", "bd", "sleep",
})  # fmt: skip
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
_SHOWN_MAX = 80
_SHOWN_ONLY = re.compile(r"\s*(?:\d?>&\d|\d?>\s*/dev/null|\|\s*(?:tail|head|grep|less|tee)\b.*$)")


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


def failed_by_its_output(key: str, output: str) -> bool:
    """Whether a test or build run (its `key`) failed by what it printed, though its exit status
    said nothing (a pipe took it: `pytest | tail`)."""
    return bool(CHECKS.match(key)) and bool(_FAILED_OUTPUT.search(output))


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


def first_line(command: str) -> str:
    """A command as a lesson names it: its first line, without what filters or redirects its
    output."""
    shown = _SHOWN_ONLY.sub("", command.strip().split("\n", 1)[0])
    return shown.strip()[:120]


def shown(command: str, key: str) -> str:
    """The command as a lesson names it: as it was run (its first line, without what filters its
    output), or its `key` when that line is long or a heredoc's."""
    line = first_line(command)
    return line if len(line) <= _SHOWN_MAX and "<<" not in line else key
