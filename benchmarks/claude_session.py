"""What reverie adds to a real Claude Code session: `claude -p` (the real CLI, pinned) runs one
Bash command for a scripted model on loopback, in a scratch HOME without reverie, in one where
`reverie install claude-code` put its hooks and the running stack's MCP server (over HTTP), in
one where it was installed before the stack ran (the MCP server `reverie mcp`, on stdio, started
by each session), and in one where only its hooks stay (the MCP server taken out), interleaved.
Each session is timed by the operating system's accounting (wait4: CPU of the CLI, its hooks and
a stdio MCP server; not the stack's) and by the wall clock. Prints one JSON line: medians in
milliseconds and what reverie adds.

    python benchmarks/claude_session.py [--runs 10]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

# the checkout's root: the real Claude Code CLI and the fake model are the tests' (tests/support/)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from reverie.mcp_endpoint import served
from schemas.settings import Settings
from tests.support.claude_code import (
    Block,
    FakeMessagesAPI,
    claude_code,
    text_block,
    tool_results,
    tool_use,
)


def scripted(body: dict[str, Any]) -> Block:
    offered = {tool.get("name") for tool in body.get("tools", [])}
    if tool_results(body) or "Bash" not in offered:
        return text_block("Done.")
    return tool_use("Bash", {"command": "echo 3 passed", "description": "run the tests"})


def session(claude: str, home: str, project: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one `claude -p` session."""
    argv = [claude, "-p", "Run the tests, please.", "--allowedTools", "Bash", "--output-format", "json"]
    start = time.perf_counter()
    child = subprocess.Popen(argv, cwd=project, env={**env, "HOME": home}, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    assert os.waitstatus_to_exitcode(status) == 0
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def install(reverie: list[str], env: dict[str, str], home: str, project: str) -> None:
    """`reverie install claude-code` into `home`, from `project`."""
    command = [*reverie, "install", "claude-code"]
    subprocess.run(command, env={**env, "HOME": home}, cwd=project, check=True, capture_output=True)


def without_mcp(home: str) -> None:
    """Take the MCP server out of what `reverie install` wrote in `home`: its hooks alone stay."""
    path = os.path.join(home, ".claude.json")
    with open(path) as f:
        config = json.load(f)
    config.pop("mcpServers", None)
    with open(path, "w") as f:
        json.dump(config, f)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    claude = claude_code()
    base = tempfile.mkdtemp(prefix="rv-session-")
    names = ("plain", "reverie", "stdio", "hooks", "orders", "data")
    plain, with_reverie, stdio, hooks_only, project, data = (os.path.join(base, n) for n in names)
    for folder in (plain, with_reverie, stdio, hooks_only, project):
        os.makedirs(folder)
    subprocess.run(["git", "init", "-q", project], check=True)
    model = FakeMessagesAPI(scripted)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC", "REDIS_URL"))}
    env |= {"REVERIE_HOME": data, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "any"}
    env |= {"CLAUDE_CODE_MAX_RETRIES": "0", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    reverie = [sys.executable, "-m", "reverie"]
    try:
        install(reverie, env, stdio, project)  # no stack yet: the stdio server
        subprocess.run([*reverie, "up", "--detach"], env=env, check=True, capture_output=True)
        deadline = time.monotonic() + 120
        settings = Settings(data)
        while time.monotonic() < deadline and not (
            os.path.exists(settings.recall_socket_path) and served(settings, {})
        ):
            time.sleep(0.1)
        for home in (with_reverie, hooks_only):
            install(reverie, env, home, project)
        without_mcp(hooks_only)
        with open(os.path.join(with_reverie, ".claude.json")) as f:
            assert json.load(f)["mcpServers"]["reverie"]["type"] == "http"
        homes = {"without": plain, "with": with_reverie, "stdio": stdio, "hooks_only": hooks_only}
        for home in homes.values():  # warm the page cache, every way
            session(claude, home, project, env)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in homes}
        for _ in range(args.runs):
            for name, home in homes.items():
                times[name].append(session(claude, home, project, env))
    finally:
        subprocess.run([*reverie, "down"], env=env, capture_output=True)
        model.close()
        shutil.rmtree(base, ignore_errors=True)
    result: dict[str, object] = {"benchmark": "claude_session", "runs": args.runs}
    for name, runs in times.items():
        result[f"{name}_reverie_wall_p50_ms"] = round(statistics.median(w for w, _ in runs), 1)
        result[f"{name}_reverie_cpu_p50_ms"] = round(statistics.median(c for _, c in runs), 1)
    labels = {"with": "added", "stdio": "added_with_stdio_mcp", "hooks_only": "added_by_hooks_alone"}
    for measure, i in (("wall", 0), ("cpu", 1)):
        for name, label in labels.items():
            added = [w[i] - wo[i] for w, wo in zip(times[name], times["without"], strict=True)]
            result[f"{label}_{measure}_pairs_median_ms"] = round(statistics.median(added), 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
