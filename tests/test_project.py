import json
import os

import msgspec
import pytest

from ingest.project import UNKNOWN_PROJECT, project_key, project_of, root_of_key
from reverie.testing import Folding
from schemas import events, kinds
from schemas.settings import Settings
from tests.conftest import run_hook
from tests.test_projections import folding, observed, rows

__all__ = ["folding"]  # a fixture


def test_the_key_is_claude_codes_folder_name() -> None:
    assert project_key("/home/marco/projects/spotter") == "-home-marco-projects-spotter"
    assert project_key("C:\\Users\\tom\\green-button") == "C--Users-tom-green-button"
    assert project_key("/a/b/") == project_key("/a/b")


def test_claude_project_dir_wins() -> None:
    payload = {"cwd": "/elsewhere", "transcript_path": "/h/.claude/projects/-x/s.jsonl"}
    assert project_of(payload, {"CLAUDE_PROJECT_DIR": "/repo/"}) == "/repo"


def test_the_transcript_folder_is_read_back_to_its_path_and_stable_when_cwd_changes() -> None:
    transcript = "/home/u/.claude/projects/-home-u-app/0b1c.jsonl"
    first = project_of({"cwd": "/home/u/app", "transcript_path": transcript}, {})
    later = project_of({"cwd": "/home/u/app/src/deep", "transcript_path": transcript}, {})
    assert first == later == "/home/u/app"


def test_two_projects_claude_code_gives_one_key_are_two_projects() -> None:
    dotted = project_of(
        {"cwd": "/w/proj.x/src", "transcript_path": "/h/.claude/projects/-w-proj-x/s.jsonl"}, {}
    )
    dashed = project_of({"cwd": "/w/proj-x", "transcript_path": "/h/.claude/projects/-w-proj-x/t.jsonl"}, {})
    assert (dotted, dashed) == ("/w/proj.x", "/w/proj-x")
    assert project_of({}, {"CLAUDE_PROJECT_DIR": "/w/proj.x"}) != project_of(
        {}, {"CLAUDE_PROJECT_DIR": "/w/proj-x"}
    )


@pytest.mark.parametrize(
    ("key", "cwd", "root"),
    [
        ("-w-proj-x", "/w/proj.x/src/deep", "/w/proj.x"),
        ("C--Users-tom-app", "C:\\Users\\tom\\app\\src", "C:\\Users\\tom\\app"),
        ("-w-app", "/w/app/", "/w/app"),
        ("-w-app", "/elsewhere", None),
    ],
)
def test_a_key_reads_back_to_the_folder_of_the_cwd_it_names(key: str, cwd: str, root: str | None) -> None:
    assert root_of_key(key, cwd) == root


def test_a_key_with_no_cwd_inside_stands_in() -> None:
    transcript = "C:\\Users\\tom\\.claude\\projects\\C--Users-tom-app\\abc.jsonl"
    assert project_of({"transcript_path": transcript}, {}) == "C--Users-tom-app"
    assert project_of({"cwd": "/tmp", "transcript_path": transcript}, {}) == "C--Users-tom-app"


def test_subagent_transcripts_belong_to_their_project() -> None:
    transcript = "/h/.claude/projects/-h-app/0b1c/subagents/agent-a1.jsonl"
    assert project_of({"cwd": "/h/app", "transcript_path": transcript}, {}) == "/h/app"


def test_git_root_above_cwd(tmp_path: os.PathLike[str]) -> None:
    root = os.path.join(tmp_path, "repo")
    os.makedirs(os.path.join(root, ".git"))
    os.makedirs(os.path.join(root, "src", "pkg"))
    assert project_of({"cwd": os.path.join(root, "src", "pkg")}, {}) == root


def test_nothing_to_go_on() -> None:
    assert project_of({}, {}) == UNKNOWN_PROJECT


def test_what_was_recorded_under_a_key_folds_under_the_path_its_cwd_names(folding: Folding) -> None:
    def prompt(seconds: float, session: str, project: str, cwd: str) -> events.Event:
        event = observed(kinds.PROMPT_SUBMITTED, seconds, session, prompt="hi", cwd=cwd)
        return msgspec.structs.replace(event, project=project)

    db = folding.fold(
        [
            prompt(1, "old-dotted", "-w-proj-x", "/w/proj.x/src"),  # recorded before projects were paths
            prompt(2, "old-dashed", "-w-proj-x", "/w/proj-x"),
            prompt(3, "new", "/w/proj.x", "/w/proj.x/docs"),
            prompt(4, "lost", "-w-proj-x", "/tmp"),
        ]
    )
    assert rows(db, "SELECT session_id, project FROM sessions ORDER BY 1") == [
        ("lost", "-w-proj-x"),
        ("new", "/w/proj.x"),
        ("old-dashed", "/w/proj-x"),
        ("old-dotted", "/w/proj.x"),
    ]


def test_projects_whose_paths_end_alike_have_a_profile_each(env: dict[str, str], settings: Settings) -> None:
    tail = "/" + "shared-suffix-" * 11  # 155 characters
    first, second = "/home/a" + tail, "/home/b" + tail
    assert settings.profile_path(first) != settings.profile_path(second)
    os.makedirs(settings.profiles_dir)
    with open(settings.profile_path(first), "w") as f:
        f.write("<reverie-memory>A's last session</reverie-memory>")
    payload = json.dumps(
        {"hook_event_name": "SessionStart", "session_id": "b1", "source": "startup"}
    ).encode()
    done = run_hook(payload, {**env, "CLAUDE_PROJECT_DIR": second})
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    done = run_hook(payload, {**env, "CLAUDE_PROJECT_DIR": first})
    assert b"A's last session" in done.stdout


def test_recall_takes_a_claude_code_key_as_its_project_though_it_starts_with_a_dash() -> None:
    from reverie.commands import _attach_dashed_values, _parser

    argv = ["recall", "--project", "-home-u-proj-x", "what broke?", "--json"]
    args = _parser().parse_args(_attach_dashed_values(argv))
    assert (args.project, args.query, args.json) == ("-home-u-proj-x", "what broke?", True)
    with pytest.raises(SystemExit):  # what argparse alone does with it
        _parser().parse_args(argv)
    assert _attach_dashed_values(["recall", "--project", "--json"]) == ["recall", "--project", "--json"]
