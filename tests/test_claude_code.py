"""reverie with the real Claude Code CLI, end to end: installed by its own installer into a scratch
HOME, a stack running, and `claude -p` in a git project against a scripted model on loopback.

The scripted model answers what a marker in the prompt asks for (run a command, start a
subagent, recall from reverie's MCP server) and "Done." otherwise, so the requests Claude Code
makes on its own (a title, a check) get a plain answer. What the agent sees is what counts:
the tests read the requests Claude Code sent the model.
"""

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ingest.injection import context_for
from schemas import kinds
from schemas.settings import Settings
from tests.support.claude_code import Block, FakeMessagesAPI, said, text_block, tool_results, tool_use
from tests.support.processes import BIN, REVERIE, Stack, one_stack_per_module, wait_for

pytestmark = pytest.mark.integration

TAUGHT = "We use PostgreSQL 16 for the orders service and run the tests with pytest -x."


RECALL = "mcp__reverie__memory_recall"


def scripted(body: dict[str, Any]) -> Block:
    """What the model answers: the tool a marker in the user's turns asks for, once; reverie's
    MCP tool as a model reaches a deferred tool: ToolSearch loads its schema, then the call."""
    answered = {block.get("tool_use_id") for block in tool_results(body)}
    offered = {tool.get("name") for tool in body.get("tools", [])}
    asked = json.dumps([m for m in body.get("messages", []) if m.get("role") == "user"])
    if "ASK_MEMORY" in asked and "toolu_recall" not in answered:
        if RECALL in offered:
            return tool_use(RECALL, {"query": "which database does the orders service use"}, "toolu_recall")
        if "ToolSearch" in offered and "toolu_search" not in answered:
            return tool_use("ToolSearch", {"query": f"select:{RECALL}"}, "toolu_search")
    if (plugin_call := _plugin_command(asked, offered, answered, body)) is not None:
        return plugin_call
    if "WRITE_NOTES" in asked and "toolu_write" in answered:
        return text_block("Wrote the notes.\n\nNext steps:\n- add the orders migration\n- run alembic check")
    if answered:
        return text_block("Done.")
    if "WRITE_NOTES" in asked and "Write" in offered:
        folder = said(body).split("Primary working directory: ", 1)[1].split("\\n", 1)[0]
        notes = {"file_path": f"{folder}/notes.md", "content": "orders: PostgreSQL 16\n"}
        return tool_use("Write", notes, "toolu_write")
    if "RUN_TESTS" in asked and "Bash" in offered:
        return tool_use("Bash", {"command": "echo 3 passed", "description": "run the tests"}, "toolu_bash")
    if "SPAWN_HELPER" in asked and offered & {"Agent", "Task"}:
        name = "Agent" if "Agent" in offered else "Task"
        brief = {"description": "check", "prompt": "Say ok.", "subagent_type": "general-purpose"}
        return tool_use(name, brief, "toolu_agent")
    return text_block("Done.")


# the plugin's MCP tools, as Claude Code names a plugin's server's tools
PLUGIN_TOOL = "mcp__plugin_reverie_reverie__{}"
# what each of the plugin's commands asks for, and the tools the model calls for it, in turn
PLUGIN_COMMANDS = {
    "Remember this with reverie's `memory_remember` tool": ("memory_remember", "memory_curate"),
    "Stash where this session stands with reverie's `memory_stash` tool": ("memory_stash",),
}


def _plugin_command(asked: str, offered: set[Any], answered: set[Any], body: dict[str, Any]) -> Block | None:
    """The next call a plugin command asks for: each of its tools once, loaded by ToolSearch
    first when deferred; remember's event id is handed to memory_curate as `after` (none when
    remembering was refused: then the model stops, as a model told nothing would)."""
    for marker, tools in PLUGIN_COMMANDS.items():
        if marker not in asked:
            continue
        for tool in tools:
            if f"toolu_{tool}" in answered:
                continue
            name = PLUGIN_TOOL.format(tool)
            if name not in offered:
                return tool_use("ToolSearch", {"query": f"select:{name}"}, f"toolu_search_{tool}")
            arguments = _plugin_arguments(tool, asked, body)
            return None if arguments is None else tool_use(name, arguments, f"toolu_{tool}")
    return None


def _plugin_arguments(tool: str, asked: str, body: dict[str, Any]) -> dict[str, Any] | None:
    if tool == "memory_remember":
        return {"text": asked.split("`memory_remember` tool: ", 1)[1].split("\\n", 1)[0]}
    if tool == "memory_curate":
        remembered = json.dumps(
            [b for b in tool_results(body) if b["tool_use_id"] == "toolu_memory_remember"]
        )
        found = re.findall(r"\b01[0-9A-HJKMNP-TV-Z]{24}\b", remembered)
        return {"after": found[0]} if found else None
    return {"name": asked.split("`memory_stash` tool, named: ", 1)[1].split("\\n", 1)[0]}


# each test works in a HOME and a project of its own, and kills nothing: they share one stack
home, env, settings, stack = one_stack_per_module()


@pytest.fixture
def model() -> Iterator[FakeMessagesAPI]:
    fake = FakeMessagesAPI(scripted)
    yield fake
    fake.close()


class Claude:
    """`claude` as a user runs it, in a scratch HOME with reverie installed, in a git project."""

    def __init__(
        self, executable: str, home: Path, project: Path, env: dict[str, str], model: FakeMessagesAPI
    ) -> None:
        self.executable, self.home, self.project = executable, home, project
        self.env = {
            **{k: v for k, v in env.items() if not k.startswith(("CLAUDE", "ANTHROPIC"))},
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": model.url,
            "ANTHROPIC_API_KEY": "any",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        self.model = model

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.executable, *args],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
        )

    def prompt(self, text: str, *tools: str, resume: str | None = None) -> dict[str, Any]:
        """One `claude -p` session (or the `resume`d one); its JSON result."""
        allowed = ["--allowedTools", ",".join(tools)] if tools else []
        resuming = ["--resume", resume] if resume else []
        done = self.run("-p", text, "--output-format", "json", *allowed, *resuming)
        assert done.returncode == 0, done.stdout + done.stderr
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    def requests_with(self, marker: str) -> list[dict[str, Any]]:
        return [r for r in self.model.requests if marker in said(r)]


def scratch(tmp_path: Path) -> tuple[Path, Path]:
    """An empty HOME, and a git project beside it."""
    home, project = tmp_path / "home", tmp_path / "orders"
    home.mkdir()
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return home, project


@pytest.fixture
def claude_code(
    claude: str, stack: Stack, env: dict[str, str], tmp_path: Path, model: FakeMessagesAPI
) -> Claude:
    home, project = scratch(tmp_path)
    recall = Settings(env["REVERIE_HOME"]).recall_socket_path  # the service the hooks ask, up
    wait_for(lambda: Path(recall).exists(), timeout=120, what="the recall service")
    installed = subprocess.run(
        [*REVERIE, "install", "claude-code"],
        env={**env, "HOME": str(home)},
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr
    return Claude(claude, home, project, env, model)


def recorded(stack: Stack, session_id: str) -> list[str]:
    rows = stack.query(
        f"select kind from events where session_id = '{session_id}' and source = 'claude-code'"
    )
    return sorted({kind for (kind,) in rows})


def test_every_hook_event_of_a_session_is_recorded(claude_code: Claude, stack: Stack) -> None:
    result = claude_code.prompt(f"{TAUGHT} RUN_TESTS", "Bash")
    session = result["session_id"]
    expected = [
        kinds.SESSION_STARTED, kinds.PROMPT_SUBMITTED, kinds.TOOL_USED, kinds.ASSISTANT_STOPPED,
        kinds.SESSION_ENDED,
    ]  # fmt: skip
    wait_for(
        lambda: set(expected) <= set(recorded(stack, session)), timeout=60, what="every hook event archived"
    )
    assert kinds.TOOL_REQUESTED not in recorded(stack, session)  # no hook before each tool call
    [(command, project, duration)] = stack.query(
        "select payload->'tool_input'->>'command', project, payload->>'duration_ms' from events "
        f"where session_id = '{session}' and kind = '{kinds.TOOL_USED}'"
    )
    assert command == "echo 3 passed" and project == str(claude_code.project)
    assert float(duration) >= 0  # how long the call took, said by Claude Code itself
    assert not list(Path(Settings(claude_code.env["REVERIE_HOME"]).dead_letter_dir).glob("*.json"))


def test_claude_code_runs_and_records_with_the_retention_install_raised_and_uninstall_restores_it(
    claude: str, stack: Stack, env: dict[str, str], tmp_path: Path, model: FakeMessagesAPI
) -> None:
    home, project = scratch(tmp_path)
    settings_json = home / ".claude" / "settings.json"
    settings_json.parent.mkdir()
    mine = b'{\n    "cleanupPeriodDays": 20,\n    "theme": "dark"\n}'  # the user's own bytes
    settings_json.write_bytes(mine)
    installed = subprocess.run(
        [*REVERIE, "install", "claude-code", "--keep-transcripts", "400", "--no-import"],
        env={**env, "HOME": str(home)}, cwd=project, capture_output=True, text=True,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    said = json.loads(settings_json.read_text())
    assert (said["cleanupPeriodDays"], said["theme"]) == (400, "dark")
    code = Claude(claude, home, project, env, model)
    session = code.prompt("RUN_TESTS please", "Bash")["session_id"]  # Claude Code reads the file we wrote
    wait_for(lambda: kinds.TOOL_USED in recorded(stack, session), timeout=60, what="the session recorded")
    removed = subprocess.run(
        [*REVERIE, "uninstall", "claude-code"],
        env={**env, "HOME": str(home)},
        cwd=project,
        capture_output=True,
    )
    assert removed.returncode == 0 and settings_json.read_bytes() == mine


def test_a_later_session_is_told_what_an_earlier_one_taught(claude_code: Claude, stack: Stack) -> None:
    claude_code.prompt(TAUGHT)
    settings = Settings(claude_code.env["REVERIE_HOME"])
    asked = {"prompt": "Which database does the orders service use?", "session_id": "later"}
    wait_for(
        lambda: "PostgreSQL" in context_for(settings, "UserPromptSubmit", asked, str(claude_code.project)),
        timeout=120,
        what="the first session's prompt to be recallable",
    )
    began = {"session_id": "later", "source": "startup"}
    wait_for(
        lambda: "PostgreSQL" in context_for(settings, "SessionStart", began, str(claude_code.project)),
        timeout=120,
        what="the first session to be what a new one is told",
    )
    claude_code.prompt("Which database does the orders service use?")
    [request] = [
        r for r in claude_code.requests_with("Which database does the orders service use?") if r.get("tools")
    ]
    body = said(request)
    assert "SessionStart hook additional context:" in body
    started = body.split("SessionStart hook additional context:", 1)[1].split("hook additional context:")[0]
    assert "PostgreSQL 16" in started and "pytest -x" in started
    # what SessionStart gave the session, its UserPromptSubmit does not give again
    prompt_context = body.partition("UserPromptSubmit hook additional context:")[2]
    assert "PostgreSQL 16" not in prompt_context


def test_claude_lists_reverie_connected_and_the_model_recalls_through_it(
    claude_code: Claude, stack: Stack
) -> None:
    listed = claude_code.run("mcp", "list")
    assert listed.returncode == 0
    [line] = [line for line in listed.stdout.splitlines() if line.startswith("reverie:")]
    assert "Connected" in line, listed.stdout
    # the stack's server, over HTTP: each call's project is the folder Claude Code shares as its root
    entry = json.loads((claude_code.home / ".claude.json").read_text())["mcpServers"]["reverie"]
    assert entry["type"] == "http" and "(HTTP)" in line, (entry, line)
    claude_code.prompt(TAUGHT)
    settings = Settings(claude_code.env["REVERIE_HOME"])
    # a session of its own: what another session's start was given is not given to it again
    asked = {"prompt": "which database does the orders service use", "session_id": "asked-over-mcp"}
    wait_for(
        lambda: "PostgreSQL" in context_for(settings, "UserPromptSubmit", asked, str(claude_code.project)),
        timeout=120,
        what="the taught prompt to be recallable",
    )
    claude_code.prompt("ASK_MEMORY before you answer", "mcp__reverie__memory_recall")
    answered = [r for r in claude_code.model.requests if tool_results(r) and "ASK_MEMORY" in said(r)]
    assert answered, "the model never got the tool's result"
    [result] = [block for block in tool_results(answered[-1]) if block["tool_use_id"] == "toolu_recall"]
    text = json.dumps(result["content"])
    assert "PostgreSQL 16" in text and "id: " in text and not result.get("is_error")


def test_a_subagent_is_told_what_its_kind_remembered_and_its_start_and_stop_are_recorded(
    claude_code: Claude, stack: Stack
) -> None:
    lesson = "Check the orders migrations with alembic check before any schema change"
    env = {**claude_code.env, "CLAUDE_PROJECT_DIR": str(claude_code.project)}
    subprocess.run([*REVERIE, "remember", "--agent", "general-purpose", lesson], env=env, check=True)
    subprocess.run([*REVERIE, "remember", "--agent", "code-reviewer", "Reviewers only"], env=env, check=True)
    settings = Settings(claude_code.env["REVERIE_HOME"])
    starting = {"agent_type": "general-purpose", "session_id": "s"}
    wait_for(
        lambda: "alembic" in context_for(settings, "SubagentStart", starting, str(claude_code.project)),
        timeout=60,
        what="the agent's memory to be known",
    )
    session = claude_code.prompt("SPAWN_HELPER to check", "Task", "Agent")["session_id"]
    subagent = claude_code.requests_with("SubagentStart hook additional context:")
    assert subagent, "no request of the subagent carried its context"
    told = said(subagent[0]).split("SubagentStart hook additional context:", 1)[1]
    assert "alembic check" in told and "Reviewers only" not in told
    wanted = {kinds.SUBAGENT_STARTED, kinds.SUBAGENT_STOPPED}
    wait_for(lambda: wanted <= set(recorded(stack, session)), timeout=60, what="the subagent's events")


def test_the_plugin_from_reveries_own_marketplace_records_and_brings_its_commands(
    claude: str, stack: Stack, env: dict[str, str], tmp_path: Path, model: FakeMessagesAPI
) -> None:
    home, project = scratch(tmp_path)
    code = Claude(claude, home, project, env, model)
    marketplace = subprocess.run(
        [*REVERIE, "claude-code", "marketplace"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert code.run("plugin", "marketplace", "add", marketplace).returncode == 0
    installed = code.run("plugin", "install", "reverie@reverie", "-y")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "✔ enabled" in code.run("plugin", "list").stdout
    listed = code.run("mcp", "list").stdout
    assert any(
        line.startswith("plugin:reverie:reverie:") and "Connected" in line for line in listed.splitlines()
    )
    session = code.prompt("RUN_TESTS please", "Bash")["session_id"]
    wanted = {kinds.SESSION_STARTED, kinds.PROMPT_SUBMITTED, kinds.TOOL_USED, kinds.SESSION_ENDED}
    wait_for(lambda: wanted <= set(recorded(stack, session)), timeout=60, what="the plugin's hooks to record")
    code.prompt("/reverie:remember --failed Offset pagination timed out on big tables")
    [expanded] = code.requests_with("Remember this with reverie's `memory_remember` tool")[:1]
    assert "--failed Offset pagination timed out on big tables" in said(expanded)


def test_the_plugins_remember_writes_claude_md_and_its_stash_keeps_where_the_session_stands(
    claude: str, stack: Stack, env: dict[str, str], tmp_path: Path, model: FakeMessagesAPI
) -> None:
    home, project = scratch(tmp_path)
    (project / "CLAUDE.md").write_text("# Orders\n\nAsk before deleting data.\n")
    code = Claude(claude, home, project, env, model)
    marketplace = subprocess.run(
        [*REVERIE, "claude-code", "marketplace"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert code.run("plugin", "marketplace", "add", marketplace).returncode == 0
    assert code.run("plugin", "install", "reverie@reverie", "-y").returncode == 0
    tools = ",".join(
        PLUGIN_TOOL.format(tool) for tool in ("memory_remember", "memory_curate", "memory_stash")
    )
    session = code.prompt("RUN_TESTS then fix the orders export", "Bash")["session_id"]
    wait_for(lambda: kinds.SESSION_ENDED in recorded(stack, session), timeout=60, what="the session recorded")

    code.prompt("/reverie:remember Orders are exported as CSV with a header row", tools)
    claude_md = (project / "CLAUDE.md").read_text()
    results = [json.dumps(b)[:400] for r in model.requests for b in tool_results(r)]  # what the tools said
    assert claude_md.startswith("# Orders\n\nAsk before deleting data.\n\n<!-- MEMORY:START -->\n"), results
    block = claude_md.split("<!-- MEMORY:START -->\n", 1)[1].split("<!-- MEMORY:END -->", 1)[0]
    assert "## Facts\n- Orders are exported as CSV with a header row\n" in block
    assert (project / ".claude/memory/facts.md").read_text().count("CSV with a header row") == 1

    code.prompt("/reverie:stash orders-export", tools, resume=session)  # typed in the session it stashes
    stashed = (project / ".claude/stash/orders-export.md").read_text()
    assert stashed.startswith("# Stash: orders-export\n")
    assert "## Goal\n- RUN_TESTS then fix the orders export\n" in stashed
    [answered] = [
        r for r in model.requests if any(b["tool_use_id"] == "toolu_memory_stash" for b in tool_results(r))
    ]
    [result] = [b for b in tool_results(answered) if b["tool_use_id"] == "toolu_memory_stash"]
    assert "orders-export.md" in json.dumps(result["content"]) and not result.get("is_error")
    wait_for(
        lambda: "orders-export" in subprocess.run(
            [*REVERIE, "sql", "--csv", "select name from stashes"], env=env, capture_output=True, text=True
        ).stdout,
        timeout=60,
        what="the stash's event folded",
    )  # fmt: skip


def readme_plugin_install() -> tuple[list[str], str, str]:
    """The README's plugin commands, the question it says `claude plugin install` asks, and the
    flag it says accepts the command outside a terminal."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    after = text.split("Or take reverie as a plugin", 1)[1]
    [block] = re.findall(r"```sh\n(.*?)```", after, re.DOTALL)[:1]
    prose = after.split("```", 2)[2].strip().split("\n\n", 1)[0]
    asked = re.search(r"asks `([^`]+)`", prose)
    flag = re.search(r"told\s+`(--[a-z-]+)`", prose)
    assert asked and flag, "the README says neither what the install asks nor how a script accepts it"
    return block.splitlines(), " ".join(asked.group(1).split()), flag.group(1)


def test_the_readme_says_what_the_plugin_install_asks_and_how_a_script_accepts_it(
    claude: str, env: dict[str, str], tmp_path: Path, model: FakeMessagesAPI
) -> None:
    (add, install), asked, flag = readme_plugin_install()
    home, project = scratch(tmp_path)
    code = Claude(claude, home, project, env, model)

    def typed(line: str) -> list[str]:
        """`line` as the user types it: this claude, this reverie."""
        return [
            "bash",
            "-c",
            line.replace("claude ", f"'{claude}' ", 1).replace(".venv/bin/reverie", str(BIN)),
        ]

    def run(line: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            typed(line), cwd=project, env=code.env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=180,
        )  # fmt: skip

    assert run(add).returncode == 0
    in_a_script = run(install)
    assert in_a_script.returncode != 0 and flag in in_a_script.stdout + in_a_script.stderr
    shown = shown_in_a_terminal(typed(install), asked.encode(), cwd=project, env=code.env)
    assert asked.encode() in shown  # the question, as a person sees it (left unanswered)
    assert "✔ enabled" not in code.run("plugin", "list").stdout
    accepted = run(f"{install} {flag}")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "✔ enabled" in code.run("plugin", "list").stdout


def shown_in_a_terminal(command: list[str], question: bytes, **popen: Any) -> bytes:
    """What `command` prints in a terminal (24 x 80) until it asks `question`, or ends; then it
    is ended unanswered (Claude Code refuses an answer typed ahead of its question)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    process = subprocess.Popen(
        command, stdin=follower, stdout=follower, stderr=follower, start_new_session=True, **popen
    )
    os.close(follower)
    shown = b""
    deadline = time.monotonic() + 120
    try:
        while question not in shown and time.monotonic() < deadline:
            if not select.select([leader], [], [], deadline - time.monotonic())[0]:
                break
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's other end closed, the command ended
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(60)
        os.close(leader)
    return shown


def test_a_resumed_session_is_told_where_it_stood(claude_code: Claude, stack: Stack) -> None:
    first = claude_code.prompt("WRITE_NOTES about the orders service", "Write")["session_id"]
    settings = Settings(claude_code.env["REVERIE_HOME"])
    wanted = {kinds.TOOL_USED, kinds.ASSISTANT_STOPPED, kinds.SESSION_ENDED}
    wait_for(lambda: wanted <= set(recorded(stack, first)), timeout=60, what="the first session archived")
    manifest = Path(settings.manifest_path(first))
    wait_for(manifest.exists, timeout=30, what="the manifest the Stop hook had written")
    asked = {"hook_event_name": "SessionStart", "session_id": first, "source": "resume"}
    wait_for(
        lambda: "notes.md" in context_for(settings, "SessionStart", asked, str(claude_code.project)),
        timeout=60,
        what="the session's files to be known",
    )
    claude_code.prompt("carry on", resume=first)
    resumed = [
        r for r in claude_code.requests_with("carry on") if "SessionStart hook additional context:" in said(r)
    ]
    assert resumed, "the resumed session was told nothing at its start"
    told = said(resumed[0]).split("SessionStart hook additional context:", 1)[1]
    assert "Where this session stood" in told and "notes.md" in told and "add the orders migration" in told


def test_claude_code_loads_no_file_a_memory_names_in_claude_md(
    claude: str, stack: Stack, env: dict[str, str], tmp_path: Path, model: FakeMessagesAPI
) -> None:
    """Claude Code loads the file an `@path` of CLAUDE.md names (`key *a*@./b.md` too, and
    `x` `@./a.md` y`, as backticks pair): memories that name files, however they pair their
    backticks, load none through reverie's block; the user's own `@path` still does."""
    home, project = scratch(tmp_path)
    named = {"a.md": "MARKER-A-17", "b.md": "MARKER-B-29", "c.md": "MARKER-C-41", "d.md": "MARKER-D-53"}
    named |= {"e.md": "MARKER-E-67", "f.md": "MARKER-F-71", "mine.md": "MARKER-THE-USERS-OWN-83"}
    for name, marker in named.items():
        (project / name).write_text(marker + "\n")
    (project / "CLAUDE.md").write_text("# Orders\n\nMy notes: @./mine.md\n")
    said = [
        "see x` @./a.md y` here",
        "key *a*@./b.md",
        "read @./c.md first",
        "see `x` @./d.md `y`",
        "[x](@./e.md) or ![y](@./e.md)",
        "``a` @./f.md",
    ]
    at_home = {**env, "HOME": str(home)}
    for text in said:
        done = subprocess.run(
            [*REVERIE, "remember", text], env=at_home, cwd=project, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    project_id = str(project.resolve())
    wait_for(
        lambda: (
            stack.query(f"SELECT count(*) FROM remembered WHERE project = '{project_id}'") == [(len(said),)]
        ),
        timeout=60,
        what="the memories folded",
    )
    curated = subprocess.run([*REVERIE, "curate"], env=at_home, cwd=project, capture_output=True, text=True)
    assert curated.returncode == 0, curated.stderr
    block = (project / "CLAUDE.md").read_text().split("<!-- MEMORY:START -->")[1]
    assert block.count("\n- ") == len(said) and "./b.md" in block  # each written, inert

    Claude(claude, home, project, env, model).prompt("What is in my notes?")
    sent = json.dumps(model.requests)
    assert "MARKER-THE-USERS-OWN-83" in sent  # Claude Code does load what an @path names
    assert [m for name, m in named.items() if name != "mine.md" and m in sent] == []
