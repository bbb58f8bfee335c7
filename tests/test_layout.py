"""The process layout is described once in code; the Procfile and docker-compose.yml say the same."""

import os
import pathlib
import subprocess
import tomllib

import pytest
import yaml

from schemas.settings import Settings
from workers.supervisor import process_layout

ROOT = pathlib.Path(__file__).resolve().parents[1]


def procfile() -> dict[str, str]:
    lines = (ROOT / "Procfile").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip())


def test_the_procfile_is_what_reverie_up_starts() -> None:
    layout = process_layout(Settings("/tmp/x"))
    assert procfile() == {p.name: "reverie " + " ".join(p.command) for p in layout}


def test_with_a_shared_redis_there_is_no_embedded_server() -> None:
    layout = process_layout(Settings("/tmp/x", "redis://db:6379/0"), workers=3)
    assert [p.name for p in layout] == [
        "dispatcher",
        "projector",
        "recall",
        "mcp",
        "dashboard",
        "scheduler",
        "worker.1",
        "worker.2",
        "worker.3",
    ]


def test_compose_runs_the_procfile_processes_against_a_redis_service() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert "redis" in services
    expected = {name: command for name, command in procfile().items() if name != "server"}
    assert {name: " ".join(s["command"]) for name, s in services.items() if name != "redis"} == expected
    for name in expected:
        assert services[name]["environment"]["REDIS_URL"].startswith(
            "redis://:${REVERIE_REDIS_PASSWORD:?set REVERIE_REDIS_PASSWORD}@redis:"
        )


def test_compose_publishes_what_host_hooks_need_on_loopback_only_and_behind_a_secret() -> None:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    published = {name: s["ports"] for name, s in services.items() if "ports" in s}
    assert published == {
        "redis": ["127.0.0.1:${REVERIE_REDIS_PORT:-6379}:6379"],
        "recall": ["127.0.0.1:${REVERIE_RECALL_PORT:-7377}:7377"],
        "mcp": ["127.0.0.1:${REVERIE_MCP_PORT:-7378}:7378"],
        "dashboard": ["127.0.0.1:${REVERIE_DASHBOARD_PORT:-7379}:7379"],
    }
    redis = services["redis"]["command"]
    assert redis[redis.index("--requirepass") + 1] == "${REVERIE_REDIS_PASSWORD:?set REVERIE_REDIS_PASSWORD}"
    recall = services["recall"]["environment"]
    assert recall["REVERIE_RECALL_LISTEN"].endswith(":7377")
    assert recall["REVERIE_RECALL_TOKEN"] == "${REVERIE_RECALL_TOKEN:?set REVERIE_RECALL_TOKEN}"
    mcp = services["mcp"]["environment"]
    assert mcp["REVERIE_MCP_LISTEN"].endswith(":7378")
    assert mcp["REVERIE_MCP_TOKEN"] == "${REVERIE_MCP_TOKEN:?set REVERIE_MCP_TOKEN}"
    dashboard = services["dashboard"]["environment"]
    assert dashboard["REVERIE_DASHBOARD_LISTEN"].endswith(":7379")
    assert dashboard["REVERIE_DASHBOARD_TOKEN"] == "${REVERIE_DASHBOARD_TOKEN:?set REVERIE_DASHBOARD_TOKEN}"
    # the MCP server asks the recall service for recall, over the compose network, with its token
    assert (mcp["REVERIE_RECALL_URL"], mcp["REVERIE_RECALL_TOKEN"]) == (
        "tcp://recall:7377",
        recall["REVERIE_RECALL_TOKEN"],
    )


def test_the_console_script_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"reverie": "reverie.cli:main"}
    assert project["requires-python"] == ">=3.11"


def readme_test_command() -> str:
    """The one command of the README's "Test it" section."""
    section = (ROOT / "README.md").read_text().split("## Test it", 1)[1]
    return section.split("```sh\n", 1)[1].split("\n```", 1)[0]


def test_ci_runs_the_readmes_test_command_verbatim() -> None:
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    assert script[:3] == [
        "#!/usr/bin/env bash",
        "# CI: the README's test command, verbatim.",
        "set -euo pipefail",
    ]
    assert script[-1] == readme_test_command()


@pytest.mark.parametrize("fast, slow", [(0, 0), (1, 0), (0, 1), (1, 1), (2, 5)])
@pytest.mark.parametrize(
    "shell", ["set -euo pipefail", "set +e"], ids=["as CI runs it", "as a user types it"]
)
def test_a_failing_fast_round_still_runs_the_slow_one_and_fails_the_command(
    tmp_path: pathlib.Path, fast: int, slow: int, shell: str
) -> None:
    """The README's two rounds of pytest, each a stand-in that notes it ran and exits as told."""
    rounds = readme_test_command().split(".venv/bin/deptry . && ", 1)[1]
    pytest_stand_in = tmp_path / ".venv" / "bin" / "pytest"
    pytest_stand_in.parent.mkdir(parents=True)
    pytest_stand_in.write_text(
        '#!/bin/sh\necho "$*" >> ran\ncase "$*" in *"not slow"*) exit "$FAST" ;; *) exit "$SLOW" ;; esac\n'
    )
    pytest_stand_in.chmod(0o755)
    ran = subprocess.run(
        ["bash", "-c", f"{shell}\n{rounds}"],
        cwd=tmp_path, env={"PATH": os.environ["PATH"], "FAST": str(fast), "SLOW": str(slow)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (tmp_path / "ran").read_text().splitlines() == ["-q -m not slow", "-q -m slow --durations=25"]
    assert (ran.returncode == 0) == (fast == slow == 0), ran.stderr
