import os

from ingest.project import UNKNOWN_PROJECT, project_key, project_of


def test_the_key_is_claude_codes_folder_name() -> None:
    assert project_key("/home/marco/projects/spotter") == "-home-marco-projects-spotter"
    assert project_key("C:\\Users\\tom\\green-button") == "C--Users-tom-green-button"
    assert project_key("/a/b/") == project_key("/a/b")


def test_claude_project_dir_wins() -> None:
    payload = {"cwd": "/elsewhere", "transcript_path": "/h/.claude/projects/-x/s.jsonl"}
    assert project_of(payload, {"CLAUDE_PROJECT_DIR": "/repo"}) == "-repo"


def test_the_transcript_folder_is_stable_when_cwd_changes() -> None:
    transcript = "/home/u/.claude/projects/-home-u-app/0b1c.jsonl"
    first = project_of({"cwd": "/home/u/app", "transcript_path": transcript}, {})
    later = project_of({"cwd": "/home/u/app/src/deep", "transcript_path": transcript}, {})
    assert first == later == "-home-u-app"


def test_windows_transcript_paths() -> None:
    transcript = "C:\\Users\\tom\\.claude\\projects\\C--Users-tom-app\\abc.jsonl"
    assert project_of({"transcript_path": transcript}, {}) == "C--Users-tom-app"


def test_subagent_transcripts_belong_to_their_project() -> None:
    transcript = "/h/.claude/projects/-h-app/0b1c/subagents/agent-a1.jsonl"
    assert project_of({"transcript_path": transcript}, {}) == "-h-app"


def test_git_root_above_cwd(tmp_path: os.PathLike[str]) -> None:
    root = os.path.join(tmp_path, "repo")
    os.makedirs(os.path.join(root, ".git"))
    os.makedirs(os.path.join(root, "src", "pkg"))
    assert project_of({"cwd": os.path.join(root, "src", "pkg")}, {}) == project_key(root)


def test_nothing_to_go_on() -> None:
    assert project_of({}, {}) == UNKNOWN_PROJECT
