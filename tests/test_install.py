"""`reverie install claude-code` and `reverie uninstall claude-code`, run as a user runs them, in a
scratch HOME and git project."""

import json
import os
import pty
import select
import shlex
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ingest
from ingest.spool import spooled
from reverie.installing.entries import HOOKED, is_ours, launcher_command, path_command
from reverie.installing.stale import stale_hooks
from schemas import kinds
from schemas.events import decode_event
from schemas.settings import Settings, read_connection
from tests.support.captures import TRANSCRIPTS
from tests.support.processes import REVERIE, Stack, wait_for

THEIRS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


@pytest.fixture
def user(tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    """A HOME with the user's own Claude Code settings (written by hand: not as we would write
    them), a git project inside it, and the environment to run reverie in, with the user's cache
    folder beside HOME (install fills it, and the tests compare HOME's files)."""
    home, project = tmp_path / "home", tmp_path / "home" / "code" / "app"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps(THEIRS))
    (home / ".claude.json").write_text('{"numStartups": 3, "projects": {}}')
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    cache = tmp_path / "cache"
    return {
        "home": home,
        "project": project,
        "cache": cache,
        "env": {**env, "HOME": str(home), "XDG_CACHE_HOME": str(cache)},
    }


def reverie(user: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*REVERIE, *args], env=user["env"], cwd=user["project"], capture_output=True, text=True, timeout=60
    )


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` (git's own left out) and its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts[:-1]
    }


def hooks_of(path: Path) -> dict[str, list[dict[str, Any]]]:
    hooks: dict[str, list[dict[str, Any]]] = json.loads(path.read_text())["hooks"]
    return hooks


@pytest.mark.parametrize("scope", ["user", "project", "local"])
def test_install_then_uninstall_leaves_every_file_as_it_was(user: dict[str, Any], scope: str) -> None:
    before = snapshot(user["home"])
    installed = reverie(user, "install", "claude-code", "--scope", scope)
    assert installed.returncode == 0, installed.stderr
    settings = {
        "user": user["home"] / ".claude" / "settings.json",
        "project": user["project"] / ".claude" / "settings.json",
        "local": user["project"] / ".claude" / "settings.local.json",
    }[scope]
    hooks = hooks_of(settings)
    assert set(hooks) >= set(HOOKED)
    for event in HOOKED:
        ours = [h for group in hooks[event] for h in group["hooks"] if is_ours(h)]
        # the project's are every checkout's: the reverie each user's PATH finds
        written = f"reverie hook {event} || true" if scope == "project" else f"launcher.py {event} || true"
        assert len(ours) == 1 and ours[0]["command"].endswith(written)
    # the hook Claude Code would wait for before every tool call is not reverie's
    assert not any(is_ours(h) for group in hooks.get("PreToolUse", []) for h in group["hooks"])
    if scope == "user":  # the user's own hooks and keys are all there, first
        assert hooks["PreToolUse"][0] == THEIRS["hooks"]["PreToolUse"][0]
        assert json.loads(settings.read_text())["permissions"] == THEIRS["permissions"]
    mcp = (user["project"] / ".mcp.json") if scope == "project" else (user["home"] / ".claude.json")
    config = json.loads(mcp.read_text())
    servers = (
        config["projects"][str(user["project"])]["mcpServers"] if scope == "local" else config["mcpServers"]
    )
    assert [servers["reverie"]["command"], *servers["reverie"]["args"]] == (
        ["reverie", "mcp"] if scope == "project" else [sys.executable, "-m", "reverie", "mcp"]
    )
    # the project's files are everyone's: one user's data directory is no part of them
    assert servers["reverie"]["env"].get("REVERIE_HOME") == (
        None if scope == "project" else user["env"]["REVERIE_HOME"]
    )
    if scope != "project":
        assert config["numStartups"] == 3  # Claude Code's own state stays
    # the hooks' patterns, compiled into the user's cache folder; uninstall leaves them (a cache,
    # which the plugin's hooks or another scope's may read)
    compiled = [p.name for p in (user["cache"] / "reverie" / "patterns").iterdir() if p.name != ".lock"]
    assert len(compiled) == 1  # and the lock writers take turns by
    uninstalled = reverie(user, "uninstall", "claude-code", "--scope", scope)
    assert uninstalled.returncode == 0, uninstalled.stderr
    assert snapshot(user["home"]) == before  # byte for byte, backups gone, no file left behind


def test_reinstalling_over_an_older_install_keeps_the_users_hooks(user: dict[str, Any]) -> None:
    settings = user["home"] / ".claude" / "settings.json"
    older = json.loads(json.dumps(THEIRS))
    readme_style = {"type": "command", "command": "/old/venv/bin/reverie hook PreToolUse"}
    older["hooks"]["PreToolUse"][0]["hooks"].append(readme_style)  # beside the user's, in one group
    older["hooks"]["SessionStart"] = [
        {"hooks": [{"type": "command", "command": "reverie hook SessionStart"}]}
    ]
    settings.write_text(json.dumps(older))
    for _ in range(2):
        assert reverie(user, "install", "claude-code").returncode == 0
    hooks = hooks_of(settings)
    assert hooks["PreToolUse"][0] == THEIRS["hooks"]["PreToolUse"][0]  # theirs, the old entry gone
    assert hooks["Stop"][0] == THEIRS["hooks"]["Stop"][0]
    for event in HOOKED:
        commands = [h["command"] for group in hooks[event] for h in group["hooks"]]
        assert sum("launcher.py" in c for c in commands) == 1 and not any(
            "reverie hook" in c for c in commands
        )


def test_reverie_knows_its_hooks_by_the_commands_it_writes_and_by_nothing_less() -> None:
    written = launcher_command("PostToolUse", {"REVERIE_HOME": "/data dir/r", "REDIS_URL": ""})
    upgraded_away = written.replace(os.path.dirname(ingest.__file__), "/gone/ingest")
    ours = [
        written,
        launcher_command("Stop"),
        upgraded_away,
        "/old/venv/bin/reverie hook PreToolUse",
        "reverie hook",
        path_command("Stop"),  # the project scope's
        path_command(
            "PostToolUse", {"REVERIE_RECALL_URL": "tcp://127.0.0.1:7377", "REDIS_URL": "redis://h:1/0"}
        ),
    ]
    theirs = [
        written + " && notify-send done",
        f"bash -c {shlex.quote(written)}",
        "NOTIFY=1 " + launcher_command("Stop"),
        written.replace(" -S -I ", " -I "),
        "python3 ~/src/reverie/ingest/launcher.py Stop || true",
        "/home/me/ingest/launcher.py",
        "reverie hook Stop | tee -a ~/hooks.log",
        "echo reverie hook",
        path_command("Stop") + "; notify-send done",
        "NOTIFY=1 " + path_command("Stop"),
        path_command("Stop").replace("|| true", "|| false"),
        "reverie hook Stop --verbose || true",
        "reverie  hook Stop || true",  # not as reverie writes it, word for word
    ]
    assert [is_ours({"type": "command", "command": c}) for c in ours] == [True] * len(ours)
    assert [is_ours({"type": "command", "command": c}) for c in theirs] == [False] * len(theirs)


def test_a_users_hooks_that_run_a_launcher_of_their_own_survive_install_and_uninstall(
    user: dict[str, Any],
) -> None:
    settings = user["home"] / ".claude" / "settings.json"
    mine = json.loads(json.dumps(THEIRS))
    mine["hooks"]["PostToolUse"] = [
        {
            "matcher": "*",
            "hooks": [
                {
                    "type": "command",
                    "command": "~/bin/audit.sh && python3 ~/src/fork/ingest/launcher.py PostToolUse",
                },
                {
                    "type": "command",
                    "command": "/usr/bin/python3 -S -I /opt/fork/ingest/launcher.py PostToolUse",
                },
            ],
        }
    ]
    mine["hooks"]["Stop"].append(
        {"hooks": [{"type": "command", "command": "reverie hook Stop | tee -a ~/log"}]}
    )
    settings.write_text(json.dumps(mine, indent=4))
    before = settings.read_bytes()
    assert reverie(user, "install", "claude-code").returncode == 0
    hooks = hooks_of(settings)
    for event, groups in mine["hooks"].items():
        assert hooks[event][: len(groups)] == groups  # theirs first, as they were
    for event in HOOKED:
        assert sum(is_ours(h) for group in hooks[event] for h in group["hooks"]) == 1
    assert reverie(user, "uninstall", "claude-code").returncode == 0
    assert settings.read_bytes() == before
    assert reverie(user, "install", "claude-code").returncode == 0
    edited = {**json.loads(settings.read_text()), "theme": "dark"}
    settings.write_text(json.dumps(edited))  # so that uninstall takes out reverie's entries alone
    assert reverie(user, "uninstall", "claude-code").returncode == 0
    assert json.loads(settings.read_text()) == {**mine, "theme": "dark"}


def test_dry_run_prints_the_diff_and_changes_nothing(user: dict[str, Any]) -> None:
    before = snapshot(user["home"])
    shown = reverie(user, "install", "claude-code", "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert f"+++ {user['home']}/.claude/settings.json" in shown.stdout
    # the user's settings are on one line, as they wrote them: the diff changes that line
    assert f"-{json.dumps(THEIRS)}" in shown.stdout and "launcher.py UserPromptSubmit || true" in shown.stdout
    assert snapshot(user["home"]) == before


def test_uninstall_keeps_what_the_user_changed_since(user: dict[str, Any]) -> None:
    settings = user["home"] / ".claude" / "settings.json"
    assert reverie(user, "install", "claude-code").returncode == 0
    edited = json.loads(settings.read_text())
    edited["theme"] = "dark"
    settings.write_text(json.dumps(edited))
    assert reverie(user, "uninstall", "claude-code").returncode == 0
    assert json.loads(settings.read_text()) == {**THEIRS, "theme": "dark"}
    assert not (user["home"] / ".claude" / "settings.json.reverie-backup").exists()


BOM = "\ufeff"
# How users' settings files are written, each as a function of the settings it holds: install
# must write what the same hand would.
STYLES: dict[str, Callable[[Any], str]] = {
    "four spaces": lambda value: json.dumps(value, indent=4) + "\n",
    "tabs": lambda value: json.dumps(value, indent="\t") + "\n",
    "one line, no final newline": lambda value: json.dumps(value),
    "one line without blanks": lambda value: json.dumps(value, separators=(",", ":")) + "\n",
    "CRLF, no final newline": lambda value: json.dumps(value, indent=2).replace("\n", "\r\n"),
    "three spaces after a BOM": lambda value: BOM + json.dumps(value, indent=3) + "\n",
    "non-ASCII kept as written": lambda value: json.dumps(value, indent=2, ensure_ascii=False) + "\n",
}


def settings_held(text: str) -> Any:
    return json.loads(text.removeprefix(BOM))


@pytest.mark.parametrize("style", STYLES)
def test_install_keeps_the_users_formatting_and_uninstall_gives_it_back(
    user: dict[str, Any], style: str
) -> None:
    settings = user["home"] / ".claude" / "settings.json"
    written = STYLES[style]({**THEIRS, "statusLine": {"type": "command", "command": "écho ☕"}})
    settings.write_bytes(written.encode())
    assert reverie(user, "install", "claude-code").returncode == 0
    installed = settings.read_bytes().decode()
    held = settings_held(installed)
    assert held["permissions"] == THEIRS["permissions"] and held["statusLine"]["command"] == "écho ☕"
    assert sum(is_ours(h) for g in held["hooks"]["UserPromptSubmit"] for h in g["hooks"]) == 1
    assert installed == STYLES[style](held)  # as the user's hand would have written it
    claude_json = (user["home"] / ".claude.json").read_text()
    assert claude_json == json.dumps(json.loads(claude_json))  # Claude Code's state, on one line as it was
    assert reverie(user, "uninstall", "claude-code").returncode == 0
    assert settings.read_bytes() == written.encode()
    # changed by the user in between: uninstall takes out reverie's entries alone, in the text
    assert reverie(user, "install", "claude-code").returncode == 0
    settings.write_bytes(settings.read_bytes().replace(b'"opus"', b'"sonnet"'))
    reinstalled = reverie({**user, "env": {**user["env"], "REVERIE_HOME": str(user["home"] / "data")}},
                          "install", "claude-code")  # fmt: skip
    assert reinstalled.returncode == 0, reinstalled.stderr
    assert settings.read_bytes().decode() == STYLES[style](settings_held(settings.read_bytes().decode()))
    assert reverie(user, "uninstall", "claude-code").returncode == 0
    assert settings.read_bytes() == written.replace('"opus"', '"sonnet"').encode()


def test_the_local_scope_changes_its_projects_entry_alone_in_claude_codes_own_file(
    user: dict[str, Any],
) -> None:
    state = user["home"] / ".claude.json"
    others: dict[str, Any] = {
        "numStartups": 3,
        "projects": {"/elsewhere": {"allowedTools": [], "mcpServers": {"db": {"command": "x"}}}},
    }
    written = json.dumps(others, indent=2)  # as Claude Code writes it: two spaces, no final newline
    state.write_text(written)
    assert reverie(user, "install", "claude-code", "--scope", "local").returncode == 0
    now = state.read_text()
    assert now == json.dumps(json.loads(now), indent=2)
    assert json.loads(now)["projects"]["/elsewhere"] == others["projects"]["/elsewhere"]
    state.write_text(now.replace('"numStartups": 3', '"numStartups": 4'))  # Claude Code started again
    assert reverie(user, "uninstall", "claude-code", "--scope", "local").returncode == 0
    assert state.read_text() == written.replace('"numStartups": 3', '"numStartups": 4')


def test_the_project_scope_names_no_path_of_this_machine_and_runs_the_reverie_on_path(
    user: dict[str, Any], tmp_path: Path
) -> None:
    no_reverie = {**user["env"], "PATH": "/usr/bin:/bin"}
    installed = reverie({**user, "env": no_reverie}, "install", "claude-code", "--scope", "project")
    assert installed.returncode == 0, installed.stderr
    assert "Your PATH has no `reverie`" in " ".join(installed.stderr.split())
    settings, servers = user["project"] / ".claude" / "settings.json", user["project"] / ".mcp.json"
    for shared in (settings, servers):
        assert not [s for s in strings_in(json.loads(shared.read_text())) if "/" in s], shared
    # a teammate's checkout, elsewhere, with reverie installed on their PATH or not at all
    checkout = tmp_path / "mate" / "src" / "app"
    shutil.copytree(user["project"], checkout)
    mate = {"HOME": str(tmp_path / "mate"), "REVERIE_HOME": str(tmp_path / "mate" / "data"),
            "CLAUDE_PROJECT_DIR": str(checkout)}  # fmt: skip
    with_reverie, without = ({**mate, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"},
                             {**mate, "PATH": "/usr/bin:/bin"})  # fmt: skip
    payload = json.dumps({"session_id": "mate-1", "hook_event_name": "Stop", "cwd": str(checkout)}).encode()
    command = reverie_command(checkout / ".claude" / "settings.json", "Stop")

    def hook(environ: dict[str, str]) -> tuple[int, bytes]:
        ran = subprocess.run(["/bin/sh", "-c", command], input=payload, env=environ, cwd=checkout,
                             capture_output=True, timeout=60)  # fmt: skip
        return ran.returncode, ran.stdout

    assert hook(without) == (0, b"")  # never blocked
    assert not os.path.exists(mate["REVERIE_HOME"])  # and nothing recorded
    assert hook(with_reverie) == (0, b"")
    [spooled_event] = spooled(Settings(mate["REVERIE_HOME"]).spool_dir)  # no stack runs: the spool took it
    assert decode_event(Path(spooled_event).read_bytes()).kind == kinds.HOOK_KINDS["Stop"]
    entry = json.loads((checkout / ".mcp.json").read_text())["mcpServers"]["reverie"]
    assert initialized([entry["command"], *entry["args"]], {**with_reverie, **entry["env"]}, checkout)
    for environ, said in ((with_reverie, False), (without, True)):
        status = subprocess.run([*REVERIE, "status"], env=environ, cwd=checkout, capture_output=True,
                                text=True, timeout=60)  # fmt: skip
        assert ("cannot run" in status.stdout) == said, status.stdout


def initialized(command: list[str], environ: dict[str, str], cwd: Path) -> bool:
    """Whether the MCP server `command` starts and answers an initialize request on stdio."""
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    served = subprocess.run(command, input=json.dumps(hello).encode() + b"\n", env=environ, cwd=cwd,
                            capture_output=True, timeout=60)  # fmt: skip
    return b'"serverInfo"' in served.stdout


def strings_in(value: Any) -> list[str]:
    """Every key and string in a JSON value."""
    if isinstance(value, dict):
        return [*value, *(s for v in value.values() for s in strings_in(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return [value] if isinstance(value, str) else []


def test_settings_that_are_not_json_are_refused_and_left_alone(user: dict[str, Any]) -> None:
    settings = user["home"] / ".claude" / "settings.json"
    settings.write_text('{"hooks": {,}')
    refused = reverie(user, "install", "claude-code")
    assert refused.returncode == 1 and f"{settings} is not JSON" in refused.stderr
    assert (
        settings.read_text() == '{"hooks": {,}'
        and not (user["home"] / ".claude.json.reverie-backup").exists()
    )


def test_the_installed_hook_records_and_never_blocks_once_its_paths_are_gone(
    user: dict[str, Any], tmp_path: Path
) -> None:
    assert reverie(user, "install", "claude-code").returncode == 0
    hooks = hooks_of(user["home"] / ".claude" / "settings.json")
    [command] = [h["command"] for g in hooks["PostToolUse"] for h in g["hooks"] if is_ours(h)]
    payload = json.dumps({"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Bash"})
    env = {k: v for k, v in user["env"].items() if k != "REVERIE_HOME"}  # the command carries it
    ran = subprocess.run(["/bin/sh", "-c", command], input=payload.encode(), env=env, capture_output=True)
    assert (ran.returncode, ran.stdout) == (0, b"")
    spool = Settings(user["env"]["REVERIE_HOME"]).spool_dir  # no stack runs: the spool took it
    assert wait_for(lambda: os.path.isdir(spool) and os.listdir(spool), what="the spooled event")
    package, removed = os.path.dirname(ingest.__file__), str(tmp_path / "upgraded-away" / "ingest")
    gone = subprocess.run(
        ["/bin/sh", "-c", command.replace(package, removed)],
        input=payload.encode(),
        env=env,
        capture_output=True,
    )
    assert gone.returncode == 0  # never 2, which Claude Code reads as "block the prompt"
    settings = user["home"] / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace(package, removed))
    stale = stale_hooks(str(user["home"]), str(user["project"]))
    assert len(stale) == len(HOOKED) and removed in stale[0]


@pytest.mark.integration
def test_hooks_on_the_host_reach_a_stack_published_on_loopback_with_its_token(
    user: dict[str, Any], env: dict[str, str], settings: Settings, tmp_path: Path
) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = "a-token-only-the-user-knows"
    stack = Stack(
        {**env, "REVERIE_RECALL_LISTEN": f"127.0.0.1:{port}", "REVERIE_RECALL_TOKEN": token}, settings
    )
    stack.start()
    try:
        project = str(user["project"])
        remember = [*REVERIE, "remember", "The orders service runs on PostgreSQL 16"]
        subprocess.run(remember, env={**env, "CLAUDE_PROJECT_DIR": project}, check=True, capture_output=True)
        host = {  # the host: its own data directory, nothing of the stack's in it
            **user["env"], "REVERIE_HOME": str(tmp_path / "host-data"), "REDIS_URL": settings.redis_url,
            "REVERIE_RECALL_URL": f"tcp://127.0.0.1:{port}", "REVERIE_RECALL_TOKEN": token,
        }  # fmt: skip
        assert reverie({**user, "env": host}, "install", "claude-code").returncode == 0
        hooks = hooks_of(user["home"] / ".claude" / "settings.json")
        [command] = [h["command"] for g in hooks["UserPromptSubmit"] for h in g["hooks"] if is_ours(h)]
        prompt = {
            "session_id": "host-1",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "which database for orders?",
        }
        bare = {k: v for k, v in user["env"].items() if not k.startswith(("REVERIE", "REDIS"))}
        bare["CLAUDE_PROJECT_DIR"] = project

        def told(with_command: str) -> str:
            ran = subprocess.run(["/bin/sh", "-c", with_command], input=json.dumps(prompt).encode(), env=bare,
                                 capture_output=True, timeout=30)  # fmt: skip
            return ran.stdout.decode()

        assert token not in command  # the hook takes it from the host's connection file
        wait_for(
            lambda: "PostgreSQL 16" in told(command),
            timeout=180,
            what="the host's hook to be told",
            every=1.0,
        )
        archived = "select count(*) from events where session_id = 'host-1' and source = 'claude-code'"
        wait_for(lambda: stack.query(archived)[0][0] >= 1, what="the host's events archived by the stack")
        connection = Path(Settings(host["REVERIE_HOME"]).connection_file)
        connection.write_text(connection.read_text().replace(token, "a-guess"))
        assert told(command) == ""  # a wrong token is told nothing
        assert not (tmp_path / "host-data" / "spool").exists()  # the events went to the stack's Redis
    finally:
        stack.stop()


PASSWORD, TOKEN = "a-redis-password", "a-recall-token"
STACK = {  # docker-compose.yml's, as published on the host
    "REDIS_URL": f"redis://:{PASSWORD}@127.0.0.1:6379/0",
    "REVERIE_RECALL_URL": "tcp://127.0.0.1:7377",
    "REVERIE_RECALL_TOKEN": TOKEN,
}


def with_stack(user: dict[str, Any]) -> dict[str, Any]:
    return {**user, "env": {**user["env"], **STACK}}


def reverie_command(path: Path, event: str) -> str:
    [command] = [h["command"] for g in hooks_of(path)[event] for h in g["hooks"] if is_ours(h)]
    return str(command)


@pytest.mark.parametrize("scope", ["user", "project", "local"])
def test_secrets_go_to_the_users_private_file_never_into_commands_or_settings(
    user: dict[str, Any], scope: str
) -> None:
    before = snapshot(user["home"])
    installed = reverie(with_stack(user), "install", "claude-code", "--scope", scope)
    assert installed.returncode == 0, installed.stderr
    for path, data in snapshot(user["home"]).items():
        assert PASSWORD.encode() not in data and TOKEN.encode() not in data, path
    settings = Settings(user["env"]["REVERIE_HOME"])
    assert read_connection(settings.connection_file) == {
        "REDIS_URL": STACK["REDIS_URL"], "REVERIE_RECALL_TOKEN": TOKEN,
    }  # fmt: skip
    assert stat.S_IMODE(os.stat(settings.connection_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(settings.home).st_mode) == 0o700
    folder = user["home"] if scope == "user" else user["project"]
    name = "settings.local.json" if scope == "local" else "settings.json"
    command = reverie_command(folder / ".claude" / name, "PostToolUse")
    if scope == "project":  # everyone's: each user's own environment, data directory and reverie
        assert command == "REVERIE_RECALL_URL=tcp://127.0.0.1:7377 reverie hook PostToolUse || true"
    else:  # the file's secrets, whatever Claude Code's environment holds for another program
        home = user["env"]["REVERIE_HOME"]
        assert command.startswith(
            f"REVERIE_HOME={home} REDIS_URL='' REVERIE_RECALL_URL=tcp://127.0.0.1:7377 "
            "REVERIE_RECALL_TOKEN='' /"
        )
    assert reverie(user, "uninstall", "claude-code", "--scope", scope).returncode == 0
    assert snapshot(user["home"]) == before
    assert not os.path.exists(settings.connection_file)


def test_the_connection_file_stays_while_another_scope_needs_it_and_goes_back_as_it_was(
    user: dict[str, Any],
) -> None:
    settings = Settings(user["env"]["REVERIE_HOME"])
    os.makedirs(settings.home, mode=0o700, exist_ok=True)
    theirs = b"# mine\nREVERIE_RECALL_TOKEN=an-old-token\nSOMETHING_ELSE=kept\n"
    Path(settings.connection_file).write_bytes(theirs)
    for scope in ("user", "local"):
        assert reverie(with_stack(user), "install", "claude-code", "--scope", scope).returncode == 0
    assert Path(settings.connection_file).read_bytes() == (
        f"# mine\nREVERIE_RECALL_TOKEN={TOKEN}\nSOMETHING_ELSE=kept\n"
        f"REDIS_URL={STACK['REDIS_URL']}\n".encode()
    )  # in place of the old line, the user's own kept
    assert reverie(user, "uninstall", "claude-code", "--scope", "user").returncode == 0
    assert read_connection(settings.connection_file)["REVERIE_RECALL_TOKEN"] == TOKEN  # local's hooks need it
    assert reverie(user, "uninstall", "claude-code", "--scope", "local").returncode == 0
    assert Path(settings.connection_file).read_bytes() == theirs
    assert not os.path.exists(settings.connection_file + ".reverie-backup")


def test_the_dry_run_shows_where_the_secrets_go_never_what_they_are(user: dict[str, Any]) -> None:
    shown = reverie(with_stack(user), "install", "claude-code", "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert "+REVERIE_RECALL_TOKEN=<hidden>" in shown.stdout and "+REDIS_URL=<hidden>" in shown.stdout
    assert PASSWORD not in shown.stdout and TOKEN not in shown.stdout
    assert not os.path.exists(Settings(user["env"]["REVERIE_HOME"]).connection_file)


def test_the_connection_file_fills_in_what_the_environment_leaves_unset(home: str) -> None:
    path = Settings(home).connection_file
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(
            f"# the stack\nREDIS_URL = {STACK['REDIS_URL']}\nREVERIE_RECALL_TOKEN={TOKEN}\nHOME=/elsewhere\n"
        )
    found = Settings.from_env({"REVERIE_HOME": home, "REDIS_URL": ""})  # empty: unset
    assert (found.redis_url, found.recall_token, found.recall_url) == (STACK["REDIS_URL"], TOKEN, None)
    assert found.connection_from == ("REDIS_URL", "REVERIE_RECALL_TOKEN")
    assert found.redis_shown == "redis://:***@127.0.0.1:6379/0"
    chosen = Settings.from_env({"REVERIE_HOME": home, "REDIS_URL": "redis://other:6379/0"})
    assert (chosen.redis_url, chosen.recall_token) == ("redis://other:6379/0", TOKEN)  # the environment wins
    os.chmod(path, 0o640)  # another user may read it: skipped, as ssh skips a key others can read
    skipped = Settings.from_env({"REVERIE_HOME": home})
    assert skipped.embedded and skipped.recall_token is None and skipped.connection_from == ()
    with pytest.raises(PermissionError, match="chmod 600"):
        read_connection(path)


def test_status_says_where_the_connection_comes_from_and_hides_the_password(user: dict[str, Any]) -> None:
    unreachable = {**STACK, "REDIS_URL": f"redis://:{PASSWORD}@127.0.0.1:1/0"}
    assert reverie({**user, "env": {**user["env"], **unreachable}}, "install", "claude-code").returncode == 0
    shown = reverie(user, "status")
    assert "redis://:***@127.0.0.1:1/0 (UNREACHABLE)" in shown.stdout
    assert "connection.env: REDIS_URL, REVERIE_RECALL_TOKEN" in " ".join(shown.stdout.split())
    assert PASSWORD not in shown.stdout + shown.stderr and TOKEN not in shown.stdout + shown.stderr


def test_sessions_starting_at_once_each_get_the_whole_plugin_and_old_folders_go(user: dict[str, Any]) -> None:
    """Claude Code runs the marketplace's command at each session's start: runs at once must
    never show a reader a folder half written, nor one that another run takes away."""
    plugins = Path(Settings.from_env(user["env"]).home) / "claude-code" / "plugins"
    plugins.mkdir(parents=True)
    for left in (plugins / ".building-killed", plugins / "0123456789abcdef"):  # a crash's, an older version's
        (left / "hooks").mkdir(parents=True)
        os.utime(left, (0, 0))
    runs = [
        subprocess.Popen(
            [*REVERIE, "claude-code", "plugin"], env=user["env"], stdout=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    printed = {run.communicate(timeout=60)[0].strip() for run in runs}
    assert all(run.returncode == 0 for run in runs)
    [folder] = printed
    assert sorted(p.name for p in plugins.iterdir()) == [Path(folder).name]
    files = {str(p.relative_to(folder)) for p in Path(folder).rglob("*") if p.is_file()}
    assert files == {
        ".claude-plugin/plugin.json",
        "hooks/hooks.json",
        ".mcp.json",
        "commands/curate.md",
        "commands/recall.md",
        "commands/remember.md",
        "commands/stash.md",
    }
    hooks = json.loads((Path(folder) / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == set(HOOKED)
    assert (
        reverie(user, "claude-code", "plugin").stdout.strip() == folder
    )  # the same content, the same folder


def transcript(user: dict[str, Any], days_old: float, name: str = "s1.jsonl") -> Path:
    """A transcript of Claude Code's under HOME, last written `days_old` days ago."""
    path: Path = user["home"] / ".claude" / "projects" / "-code-app" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"type": "summary"}\n')
    then = time.time() - days_old * 86_400
    os.utime(path, (then, then))
    return path


def kept_days(user: dict[str, Any]) -> Any:
    return json.loads((user["home"] / ".claude" / "settings.json").read_text()).get("cleanupPeriodDays")


@pytest.mark.parametrize("scope", ["user", "project", "local"])
def test_install_keeps_transcripts_longer_and_uninstall_puts_the_file_back_byte_for_byte(
    user: dict[str, Any], scope: str
) -> None:
    transcript(user, days_old=20)
    before = snapshot(user["home"])
    keep = ["--scope", scope, "--keep-transcripts", "365"]
    shown = reverie(user, "install", "claude-code", *keep, "--dry-run")
    assert '"cleanupPeriodDays": 365}' in shown.stdout and snapshot(user["home"]) == before
    installed = reverie(user, "install", "claude-code", *keep)
    assert installed.returncode == 0, installed.stderr
    said = " ".join(installed.stderr.split())
    assert "Claude Code holds 1 transcript " in said and "the oldest 20 days old" in said
    assert "older than 30 days at each start (cleanupPeriodDays, its default)" in said
    assert "now keeps its transcripts 365 days" in said
    assert kept_days(user) == 365  # the user's settings, whatever the scope: the project's may not set it
    assert "The stack is not running, so nothing was imported (1 transcript to import)" in said
    again = reverie(user, "install", "claude-code", "--scope", scope)
    assert "older than 365 days" in " ".join(again.stderr.split())
    assert reverie(user, "uninstall", "claude-code", "--scope", scope).returncode == 0
    assert snapshot(user["home"]) == before


@pytest.mark.parametrize("theirs", [1000, 0, "forever"])
def test_a_period_of_the_users_that_is_as_long_or_not_a_number_of_days_is_left_alone(
    user: dict[str, Any], theirs: Any
) -> None:
    settings = user["home"] / ".claude" / "settings.json"
    settings.write_text(json.dumps({**THEIRS, "cleanupPeriodDays": theirs}))
    installed = reverie(user, "install", "claude-code", "--keep-transcripts", "365")
    assert installed.returncode == 0, installed.stderr
    assert kept_days(user) == theirs
    assert "cleanupPeriodDays left as it is" in " ".join(installed.stderr.split())


def test_uninstall_leaves_a_period_the_user_changed_since_and_says_so(user: dict[str, Any]) -> None:
    settings = user["home"] / ".claude" / "settings.json"
    assert reverie(user, "install", "claude-code", "--keep-transcripts", "90").returncode == 0
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "cleanupPeriodDays": 500}))
    uninstalled = reverie(user, "uninstall", "claude-code")
    assert uninstalled.returncode == 0, uninstalled.stderr
    assert "is 500 now, not the 90 install set: left as you set it" in " ".join(uninstalled.stderr.split())
    assert json.loads(settings.read_text()) == {**THEIRS, "cleanupPeriodDays": 500}
    # changed elsewhere only: the period install set goes, back to what it was (unset)
    assert reverie(user, "install", "claude-code", "--keep-transcripts", "90").returncode == 0
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "theme": "dark"}))
    assert reverie(user, "uninstall", "claude-code").returncode == 0
    assert json.loads(settings.read_text()) == {**THEIRS, "cleanupPeriodDays": 500, "theme": "dark"}


def test_the_period_in_force_is_the_first_file_claude_code_reads_that_sets_one(tmp_path: Path) -> None:
    from reverie.installing.retention import DEFAULT_DAYS, period

    managed, local, user_file = (tmp_path / n for n in ("managed.json", "local.json", "user.json"))
    files = [str(local), str(user_file)]
    assert period(files, managed=[str(managed)]).days == DEFAULT_DAYS
    user_file.write_text('{"cleanupPeriodDays": 60}')
    local.write_text('{"cleanupPeriodDays": "soon"}')  # not a number of days: passed over
    assert period(files, managed=[str(managed)]).set_in == str(user_file)
    local.write_text('{"cleanupPeriodDays": 14}')
    assert period(files, managed=[str(managed)]).days == 14
    managed.write_text('{"cleanupPeriodDays": 7}')
    found = period(files, managed=[str(managed)])
    assert (found.days, found.managed) == (7, True)


def answered_in_a_terminal(command: list[str], question: bytes, answer: bytes, **popen: Any) -> bytes:
    """What `command` prints in a terminal, `answer` typed once it asks `question`."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        command, stdin=follower, stdout=follower, stderr=follower, start_new_session=True, **popen
    )
    os.close(follower)
    shown, typed = b"", False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if not typed and question in shown:
                os.write(leader, answer)
                typed = True
            if not select.select([leader], [], [], deadline - time.monotonic())[0]:
                break
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the command ended
                break
            if not chunk:
                break
            shown += chunk
    finally:
        process.wait(60)
        os.close(leader)
    return shown


QUESTION = b"Keep Claude Code's transcripts for 3650 days"


def test_install_asks_to_keep_transcripts_on_a_terminal_and_never_elsewhere(user: dict[str, Any]) -> None:
    elsewhere = reverie(user, "install", "claude-code")
    assert QUESTION.decode() not in elsewhere.stderr and kept_days(user) is None
    declined = answered_in_a_terminal(
        [*REVERIE, "install", "claude-code"], QUESTION, b"n\n", env=user["env"], cwd=user["project"]
    )
    assert QUESTION in declined and kept_days(user) is None
    accepted = answered_in_a_terminal(
        [*REVERIE, "install", "claude-code"], QUESTION, b"y\n", env=user["env"], cwd=user["project"]
    )
    assert b"now keeps its transcripts 3650 days" in accepted and kept_days(user) == 3650
    asked_again = answered_in_a_terminal(
        [*REVERIE, "install", "claude-code"], QUESTION, b"y\n", env=user["env"], cwd=user["project"]
    )
    assert QUESTION not in asked_again  # it keeps them that long already


@pytest.mark.integration
def test_install_imports_the_history_in_the_background_and_status_follows_it(
    user: dict[str, Any], stack: Stack
) -> None:
    from ingest.transcripts import BadLine, Places, find_transcripts, read_transcript

    folder = user["home"] / ".claude" / "projects" / "-fixtures"
    shutil.copytree(TRANSCRIPTS, folder)
    files, places = find_transcripts(str(folder)), Places()  # as the import reads them
    events = sum(not isinstance(item, BadLine) for path in files for item in read_transcript(path, places))
    installed = reverie(user, "install", "claude-code", "--no-import")
    assert "in the background" not in installed.stderr
    installed = reverie(user, "install", "claude-code")
    assert installed.returncode == 0, installed.stderr
    assert f"Importing the {len(files)} transcripts into reverie in the background" in " ".join(
        installed.stderr.split()
    )

    def finished() -> dict[str, Any] | None:
        shown = json.loads(reverie(user, "status", "--json").stdout)["transcript_import"]
        return shown if shown and shown["finished_at"] else None

    progress = wait_for(finished, timeout=120, what="the background import to finish", every=0.5)
    assert (progress["transcripts"], progress["done"], progress["events"]) == (len(files), len(files), events)
    assert progress["sent"] == events  # none of these sessions was in the log
    imported = f"select count(*) from events where source = 'import' and kind != '{kinds.PROJECT_IDENTIFIED}'"
    wait_for(lambda: stack.query(imported)[0][0] == events, timeout=120, what="the imported events archived")
    shown = " ".join(reverie(user, "status").stdout.split())
    assert (
        "transcript import done" in shown
        and f"{len(files)} of {len(files)} transcripts, {events:,} events ({events:,} new)" in shown
    )
