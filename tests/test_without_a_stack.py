"""What the commands say when no stack runs, and when the data directory does not exist: only
what is true (nothing reads `None`), and a command that reads memory makes nothing."""

import json
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from schemas.settings import Settings
from tests.support.processes import REVERIE, run_hook

KEPT_IN_REDIS = ("stream length", "pending", "lag", "dispatchers", "workers", "jobs under way",
                 "scheduled jobs", "failed jobs")  # fmt: skip


def reverie(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*REVERIE, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def rows(status: str) -> dict[str, str]:
    """`reverie status`'s table, by row name (a value folded over lines joined back)."""
    found: dict[str, str] = {}
    name = ""
    for line in status.splitlines():
        if named := re.match(r" ?(\S+(?: \S+)*)\s{2,}(.*)", line):  # a name: words one blank apart
            name = named[1]
            found[name] = named[2].strip()
        elif name:
            found[name] += " " + line.strip()
    return found


def test_status_with_the_stack_down_says_what_it_cannot_know(env: dict[str, str]) -> None:
    shown = reverie({**env, "COLUMNS": "200"}, "status")
    assert shown.returncode == 1  # Redis unreachable
    assert not re.search(r"\bNone\b", shown.stdout), shown.stdout
    said = rows(shown.stdout)
    assert [said[name] for name in KEPT_IN_REDIS] == ["unknown (Redis does not answer)"] * len(KEPT_IN_REDIS)
    assert said["data directory"] == env["REVERIE_HOME"] and said["dead letters"] == "none"
    state = json.loads(reverie(env, "status", "--json").stdout)
    assert state["reachable"] is False
    unknown = ("stream_length", "pending", "lag", "jobs_under_way", "scheduled_jobs", "failed_jobs")
    assert [state[name] for name in unknown] == [None] * len(unknown)


def test_status_says_where_dead_letters_are_and_stops_counting_those_deleted(env: dict[str, str]) -> None:
    assert run_hook(b"not a payload", env, "Stop").returncode == 0  # a dead letter, as Claude Code may send
    said = rows(reverie({**env, "COLUMNS": "300"}, "status").stdout)["dead letters"]
    folder = Settings(env["REVERIE_HOME"]).dead_letter_dir
    assert said.startswith("1, input that became no event") and "from dead_letters" in said and folder in said
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))  # read, and dealt with
    assert rows(reverie({**env, "COLUMNS": "300"}, "status").stdout)["dead letters"] == "none"


@pytest.fixture
def missing(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """The environment of a REVERIE_HOME that does not exist, nor its parent."""
    return {**env, "REVERIE_HOME": str(tmp_path / "nowhere" / "memory"), "COLUMNS": "300"}


def test_status_of_a_data_directory_that_does_not_exist_says_so_and_makes_nothing(
    missing: dict[str, str], tmp_path: Path
) -> None:
    shown = reverie(missing, "status")
    said = rows(shown.stdout)
    assert said["data directory"].endswith("(does not exist yet: no memory here; `reverie up` makes it)")
    assert not re.search(r"\bNone\b", shown.stdout), shown.stdout
    assert json.loads(reverie(missing, "status", "--json").stdout)["archived"] == 0
    assert not (tmp_path / "nowhere").exists()


READS = [
    ["recall", "how do we deploy?"],
    ["recall", "how do we deploy?", "--all-projects", "--json"],
    ["reflect", "should we keep DuckDB?"],
    ["why", "fact:9c4aa661d8"],
    ["sql", "select count(*) from events"],
    ["sql", "select 1"],
    ["export", "json"],
    ["export", "markdown", "exported"],
    ["curate", "--dry-run"],
    ["curate"],
]


@pytest.mark.parametrize("args", READS, ids=" ".join)
def test_a_command_that_reads_memory_makes_no_data_directory_and_says_there_is_none(
    missing: dict[str, str], tmp_path: Path, args: list[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    ran = reverie(missing, *args, cwd=project)
    assert ran.returncode == 1
    assert f"no memory in {missing['REVERIE_HOME']} yet" in " ".join(ran.stderr.split())
    assert not (tmp_path / "nowhere").exists()
    assert os.listdir(project) == []  # no CLAUDE.md, no export folder


def test_recall_asked_of_a_service_that_does_not_answer_still_makes_nothing(
    missing: dict[str, str], tmp_path: Path
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens there once it is closed
    elsewhere = {**missing, "REVERIE_RECALL_URL": f"tcp://127.0.0.1:{port}", "REVERIE_RECALL_TOKEN": "t"}
    for args in (["recall", "how do we deploy?"], ["reflect", "should we keep DuckDB?"]):
        ran = reverie(elsewhere, *args, cwd=tmp_path)
        assert ran.returncode == 1 and "no memory in" in ran.stderr, ran.stderr
    assert not (tmp_path / "nowhere").exists()
