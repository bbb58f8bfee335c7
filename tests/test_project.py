import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import msgspec
import pytest

from ingest.dead_letters import count_dead_letters
from ingest.project import (
    ROOT_FIELD,
    UNKNOWN_PROJECT,
    first_sight,
    git_config,
    identify,
    keep_place,
    kept_place,
    mark,
    project_key,
    project_of,
    remote_key,
    root_of_key,
)
from ingest.spool import spooled
from ingest.transcripts import ImportedEvent, read_transcript
from projections.projector import replay
from projections.store import current_store
from reverie.testing import Folding, event_at, imported_event
from schemas import events, kinds
from schemas.observed import ProjectIdentified
from schemas.settings import Settings
from tests.support.events import at, checksums, observed, rows
from tests.support.processes import BIN, Stack, run_hook, wait_for
from workers.extraction.files import entity_id, file_entities
from workers.identify import unidentified


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

    def payload(session: str) -> bytes:
        return json.dumps(
            {"hook_event_name": "SessionStart", "session_id": session, "source": "startup"}
        ).encode()

    done = run_hook(payload("b1"), {**env, "CLAUDE_PROJECT_DIR": second})
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    done = run_hook(payload("a1"), {**env, "CLAUDE_PROJECT_DIR": first})
    assert b"A's last session" in done.stdout


def test_recall_takes_a_claude_code_key_as_its_project_though_it_starts_with_a_dash() -> None:
    from reverie.cli.parser import attach_dashed_values, parser

    argv = ["recall", "--project", "-home-u-proj-x", "what broke?", "--json"]
    args = parser().parse_args(attach_dashed_values(argv))
    assert (args.project, args.query, args.json) == ("-home-u-proj-x", "what broke?", True)
    with pytest.raises(SystemExit):  # what argparse alone does with it
        parser().parse_args(argv)
    assert attach_dashed_values(["recall", "--project", "--json"]) == ["recall", "--project", "--json"]


# -- one repository, one project (issue 21) ---------------------------------------------------

GIT_ENV = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1"}


def git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True)


def repository(folder: Path, remote: str | None = None) -> Path:
    """A git repository with one commit (and a remote `origin`, if given)."""
    git("init", "-q", str(folder))
    git(
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "start",
        cwd=folder,
    )
    if remote:
        git("remote", "add", "origin", remote, cwd=folder)
    (folder / "lib").mkdir()
    return folder


def worktree(main: Path, folder: Path) -> Path:
    git("worktree", "add", "-q", "-b", folder.name, str(folder), cwd=main)
    (folder / "lib").mkdir(exist_ok=True)
    return folder


def hooked(env: dict[str, str], home: str, *calls: tuple[str, Path, str]) -> list[events.Event]:
    """Run the real hook (no Redis: it spools) once per (session, cwd, file it edits); every
    event it spooled, in order."""
    for session, cwd, edited in calls:
        payload = {
            "session_id": session,
            "hook_event_name": "PostToolUse",
            "cwd": str(cwd),
            "tool_name": "Edit",
            "tool_input": {"file_path": edited},
        }
        done = run_hook(json.dumps(payload).encode(), env, "PostToolUse")
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert count_dead_letters(Settings(home).dead_letter_dir) == 0
    return [events.decode_event(open(path, "rb").read()) for path in spooled(Settings(home).spool_dir)]


def payload(event: events.Event) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(bytes(event.payload))
    return decoded


def identifications(recorded: list[events.Event]) -> set[tuple[str, str]]:
    return {
        (p["root"], p["project"])
        for e in recorded
        if e.kind == kinds.PROJECT_IDENTIFIED
        for p in [payload(e)]
    }


def test_worktrees_of_one_repository_are_one_project_through_the_hook_and_a_file_is_one_entity(
    env: dict[str, str], home: str, tmp_path: Path
) -> None:
    main = repository(tmp_path / "app")
    fix = worktree(main, tmp_path / "app-fix")
    recorded = hooked(
        env,
        home,
        ("s1", main, str(main / "lib" / "x.ex")),
        ("s2", fix / "lib", str(fix / "lib" / "x.ex")),
    )
    used = [e for e in recorded if e.kind == kinds.TOOL_USED]
    assert [(e.session_id, e.project) for e in used] == [("s1", str(main)), ("s2", str(main))]
    assert [payload(e)[ROOT_FIELD] for e in used] == [str(main), str(fix)]
    # what was recorded under the linked worktree's path before folds under the repository
    assert identifications(recorded) == {(str(fix), str(main))}
    observed = list(file_entities(used))
    assert {(entity.entity_id, entity.name, project) for entity, project, _ in observed} == {
        (observed[0][0].entity_id, "lib/x.ex", str(main))
    }
    assert sorted(cause for _, _, causes in observed for cause in causes) == sorted(e.id for e in used)
    again = hooked(env, home, ("s3", fix, str(fix / "lib" / "y.ex")))
    assert identifications(again) == identifications(recorded)  # said once per root


def transcript_lines(session: str, cwd: Path, edited: str) -> list[dict[str, Any]]:
    def line(n: int, kind: str, content: Any) -> dict[str, Any]:
        return {
            "type": kind,
            "uuid": f"{session}-{n}",
            "timestamp": f"2026-01-05T09:00:0{n}Z",
            "sessionId": session,
            "cwd": str(cwd),
            "message": {"role": kind, "content": content},
        }

    call = {"type": "tool_use", "id": f"{session}-t", "name": "Edit", "input": {"file_path": edited}}
    result = {"type": "tool_result", "tool_use_id": f"{session}-t", "content": "ok"}
    return [line(1, "user", "fix x"), line(2, "assistant", [call]), line(3, "user", [result])]


def write_transcript(path: Path, lines: list[dict[str, Any]]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def test_worktrees_of_one_repository_are_one_project_through_the_import(tmp_path: Path) -> None:
    main = repository(tmp_path / "app")
    fix = worktree(main, tmp_path / "app-fix")
    found = []
    for session, cwd in (("s1", main), ("s2", fix)):
        path = write_transcript(
            tmp_path / "t" / f"{session}.jsonl", transcript_lines(session, cwd, str(cwd / "lib" / "x.ex"))
        )
        found += [imported_event(i) for i in read_transcript(path) if isinstance(i, ImportedEvent)]
    assert {e.project for e in found} == {str(main)}
    assert {payload(e)[ROOT_FIELD] for e in found if e.session_id == "s2"} == {str(fix)}
    assert {(entity.entity_id, entity.name) for entity, _, _ in file_entities(found)} == {
        (entity_id("file", "lib/x.ex", str(main)), "lib/x.ex")
    }


def test_clones_with_one_remote_are_one_project_and_no_credential_is_kept(
    env: dict[str, str], home: str, tmp_path: Path
) -> None:
    token = "ghp_" + "Zq3xW9vB7nM5kL1jH8gF6dS4aP2oI0uY9tR7"
    ssh = repository(tmp_path / "laptop", "git@github.com:Owner/Repo.git")
    https = repository(tmp_path / "ci", f"https://bob:{token}@GitHub.com/Owner/Repo")
    both = [identify(str(ssh / "lib")), identify(str(https))]
    assert both == [("github.com/Owner/Repo", str(ssh)), ("github.com/Owner/Repo", str(https))]
    recorded = hooked(env, home, ("s1", https / "lib", str(https / "lib" / "x.ex")))
    assert {e.project for e in recorded} == {"github.com/Owner/Repo"}
    for path in spooled(Settings(home).spool_dir) + os.listdir(Settings(home).sessions_dir):
        where = path if os.path.isabs(path) else os.path.join(Settings(home).sessions_dir, path)
        assert token.encode() not in open(where, "rb").read()
        assert b"bob" not in open(where, "rb").read()


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Owner/Repo.git",
        "https://github.com/Owner/Repo",
        "https://github.com/Owner/Repo.git/",
        "ssh://git@github.com/Owner/Repo.git",
        "ssh://git@GITHUB.COM:22/Owner/Repo",
        "https://user:s3cr3t-t0ken@github.com/Owner/Repo.git",
        "https://x-access-token:s3cr3t-t0ken@github.com/Owner/Repo?private_token=s3cr3t-t0ken",
        "user:s3cr3t-t0ken@github.com:Owner/Repo.git",
        "git://github.com/Owner/Repo",
    ],
)
def test_a_remotes_every_spelling_is_one_key_without_its_credentials(url: str) -> None:
    assert remote_key(url) == "github.com/Owner/Repo"


def test_a_local_remote_is_its_path_and_the_config_names_origin_first(tmp_path: Path) -> None:
    assert remote_key("../shared/repo.git", "/w/app") == "/w/shared/repo"
    assert remote_key("file:///srv/git/repo.git") == "/srv/git/repo"
    config = (
        '[core]\n\tbare = false\n[remote "upstream"]\n\turl = git@gitlab.com:Up/Stream.git\n'
        '[remote "origin"] # ours\n\turl = "https://github.com/Owner/Repo" ; a comment\n'
        "\turl = https://mirror.example/Owner/Repo\n"
    )
    assert git_config(config) == ("https://github.com/Owner/Repo", None)
    assert git_config('[remote "upstream"]\n\tURL = git@gitlab.com:Up/Stream.git\n')[0] == (
        "git@gitlab.com:Up/Stream.git"
    )
    origin = repository(tmp_path / "origin")
    clone = tmp_path / "clone"
    git("clone", "-q", str(origin), str(clone))
    assert identify(str(clone))[0] == identify(str(origin))[0] == str(origin)


def test_different_repositories_stay_apart(tmp_path: Path) -> None:
    found = {
        identify(str(repository(tmp_path / "a")))[0],
        identify(str(worktree(tmp_path / "a", tmp_path / "a-wt")))[0],
        identify(str(repository(tmp_path / "b")))[0],
        identify(str(repository(tmp_path / "c", "git@github.com:Owner/C.git")))[0],
        identify(str(repository(tmp_path / "d", "git@github.com:Owner/D.git")))[0],
        identify(str(tmp_path))[0],
    }
    assert found == {
        str(tmp_path / "a"),
        str(tmp_path / "b"),
        "github.com/Owner/C",
        "github.com/Owner/D",
        str(tmp_path),
    }


def test_a_session_stays_in_its_project_wherever_its_cwd_goes(
    env: dict[str, str], home: str, tmp_path: Path
) -> None:
    main = repository(tmp_path / "app", "git@github.com:Owner/App.git")
    (tmp_path / "elsewhere").mkdir()
    other = repository(tmp_path / "other")
    recorded = hooked(
        env,
        home,
        ("s1", main, str(main / "lib" / "a.ex")),
        ("s1", main / "lib", str(main / "lib" / "b.ex")),
        ("s1", tmp_path / "elsewhere", str(main / "lib" / "c.ex")),
        ("s1", other, str(other / "lib" / "d.ex")),
        ("s2", other, str(other / "lib" / "e.ex")),
    )
    used = [e for e in recorded if e.kind == kinds.TOOL_USED]
    assert [(e.session_id, e.project, payload(e)[ROOT_FIELD]) for e in used] == [
        ("s1", "github.com/Owner/App", str(main)),
        ("s1", "github.com/Owner/App", str(main)),
        ("s1", "github.com/Owner/App", str(main)),
        ("s1", "github.com/Owner/App", str(main)),
        ("s2", str(other), str(other)),
    ]
    assert {e.name for e, _, _ in file_entities(used)} == {
        "lib/a.ex",
        "lib/b.ex",
        "lib/c.ex",
        str(other / "lib" / "d.ex"),  # another repository's file, named as the tool gave it
        "lib/e.ex",
    }


def test_the_projector_folds_every_event_of_a_session_under_its_first_project(folding: Folding) -> None:
    def prompt(seconds: float, session: str, project: str, cwd: str) -> events.Event:
        event = observed(kinds.PROMPT_SUBMITTED, seconds, session, prompt="hi", cwd=cwd)
        return msgspec.structs.replace(event, project=project)

    db = folding.fold(
        [prompt(1, "s1", "/w/app", "/w/app"), prompt(2, "s1", "/tmp", "/tmp")],
        [prompt(3, "s1", "/w/other", "/w/other"), prompt(4, "s2", "/w/other", "/w/other")],
    )
    assert rows(db, "SELECT session_id, project FROM sessions ORDER BY 1") == [
        ("s1", "/w/app"),
        ("s2", "/w/other"),
    ]
    assert rows(db, "SELECT session_id, project, count(*) FROM prompts GROUP BY ALL ORDER BY 1") == [
        ("s1", "/w/app", 3),
        ("s2", "/w/other", 1),
    ]


def identified(seconds: float, root: str, project: str) -> events.Event:
    return event_at(
        kinds.PROJECT_IDENTIFIED, ProjectIdentified(root=root, project=project), at(seconds), project=project
    )


def test_replay_after_identification_folds_old_path_keyed_events_under_the_repository(
    folding: Folding, settings: Settings
) -> None:
    def prompt(seconds: float, session: str, project: str, cwd: str) -> events.Event:
        event = observed(kinds.PROMPT_SUBMITTED, seconds, session, prompt="hi", cwd=cwd)
        return msgspec.structs.replace(event, project=project)

    old = [
        prompt(1, "old", "/w/app-fix", "/w/app-fix/src"),  # recorded when projects were paths
        prompt(2, "older", "-w-app-fix", "/w/app-fix"),  # and before, under Claude Code's key
        prompt(3, "apart", "/w/elsewhere", "/w/elsewhere"),  # a path never identified
    ]
    db = folding.fold(old)
    assert rows(db, "SELECT DISTINCT project FROM prompts ORDER BY 1") == [("/w/app-fix",), ("/w/elsewhere",)]
    store = folding.projector.store
    db = folding.fold(
        [
            identified(10, "/w/app-fix", "github.com/Owner/App"),
            prompt(11, "new", "github.com/Owner/App", "/w/app"),
        ]
    )
    assert folding.projector.store is not None and store is not None
    assert folding.projector.store.path != store.path  # rebuilt: what was folded moved
    expected = [
        ("apart", "/w/elsewhere"),
        ("new", "github.com/Owner/App"),
        ("old", "github.com/Owner/App"),
        ("older", "github.com/Owner/App"),
    ]
    assert rows(db, "SELECT session_id, project FROM prompts ORDER BY 1") == expected
    assert rows(db, "SELECT session_id, project FROM sessions ORDER BY 1") == expected
    assert rows(db, "SELECT value FROM meta WHERE key = 'projects_moved'") == []
    live = checksums(db)
    folding.close()
    replay(settings.event_log_dir, settings.projections_dir)
    rebuilt = current_store(settings.projections_dir)
    assert rebuilt is not None
    assert checksums(duckdb.connect(rebuilt.snapshot, read_only=True)) == live
    # a newer identification of the root holds (a remote renamed, say), and moves it again
    db = folding.fold([identified(20, "/w/app-fix", "github.com/Owner/Renamed")])
    assert rows(db, "SELECT project FROM prompts WHERE session_id = 'old'") == [("github.com/Owner/Renamed",)]


def test_the_stack_identifies_the_recorded_paths_this_disk_knows(folding: Folding, tmp_path: Path) -> None:
    main = repository(tmp_path / "app")
    fix = worktree(main, tmp_path / "app-fix")
    remote = repository(tmp_path / "remote", "git@github.com:Owner/Remote.git")

    def prompt(seconds: float, session: str, project: str) -> events.Event:
        event = observed(kinds.PROMPT_SUBMITTED, seconds, session, prompt="hi", cwd=project)
        return msgspec.structs.replace(event, project=project)

    db = folding.fold(
        [
            prompt(1, "a", str(fix)),
            prompt(2, "b", str(main)),  # its own project already
            prompt(3, "c", str(remote / "lib")),  # recorded in a subfolder (CLAUDE_PROJECT_DIR)
            prompt(4, "d", "/not/on/this/disk"),
        ]
    )
    assert unidentified(db) == [
        ProjectIdentified(root=str(fix), project=str(main)),
        ProjectIdentified(root=str(remote / "lib"), project="github.com/Owner/Remote"),
    ]
    db = folding.fold([identified(10, f.root, f.project) for f in unidentified(db)])
    assert unidentified(db) == []
    assert rows(db, "SELECT session_id, project FROM sessions ORDER BY 1") == [
        ("a", str(main)),
        ("b", str(main)),
        ("c", "github.com/Owner/Remote"),
        ("d", "/not/on/this/disk"),
    ]


def test_every_front_door_agrees_on_the_project_of_a_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from reverie import recalling, remembering
    from reverie.installing.plan import project_root

    main = repository(tmp_path / "app")
    fix = worktree(main, tmp_path / "app-fix")
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.chdir(fix / "lib")
    assert remembering.current_place() == (str(main), str(fix))  # remember, forget, the MCP server
    assert recalling.project_named(".") == recalling.project_named(str(main)) == str(main)  # recall, reflect
    assert recalling.place_named(str(fix / "lib")) == (str(main), str(fix))
    assert project_root(str(fix / "lib")) == str(fix)  # where the project scope writes
    assert project_of({"cwd": str(fix / "lib")}, {}) == str(main)  # the hook, the import


def test_the_hook_knows_a_worktrees_project_within_its_import_budget(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding the repository and keeping the session's project reads git's files and the data
    directory's: it imports neither `re`, `json`, `hashlib` (OpenSSL) nor anything to spawn git."""
    from ingest.envelope import compile_patterns

    cache = str(tmp_path / "cache")
    monkeypatch.setenv("XDG_CACHE_HOME", cache)
    assert compile_patterns() is not None  # as `reverie install` does
    main = repository(tmp_path / "app", "https://bob:hunter22@github.com/Owner/App.git")
    fix = worktree(main, tmp_path / "app-fix")
    launcher = Path(__file__).resolve().parent.parent / "ingest" / "launcher.py"
    offline = {"REVERIE_HOME": home, "REDIS_URL": f"unix://{home}/nobody.sock", "PATH": os.environ["PATH"]}
    offline["XDG_CACHE_HOME"] = cache
    for cwd in (fix / "lib", tmp_path):  # the session's first hook, then one that moved out
        call = {"session_id": "s1", "hook_event_name": "PostToolUse", "cwd": str(cwd), "tool_name": "LS"}
        done = subprocess.run(
            [sys.executable, "-S", "-I", "-X", "importtime", str(launcher), "PostToolUse"],
            input=json.dumps(call).encode(),
            env=offline,
            capture_output=True,
            check=True,
        )
        imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines()}
        assert "ingest.project" in imported
        assert not imported & {
            "re",
            "json",
            "hashlib",
            "_hashlib",
            "enum",
            "typing",
            "subprocess",
            "contextlib",
        }
    recorded = [events.decode_event(open(path, "rb").read()) for path in spooled(Settings(home).spool_dir)]
    assert {(e.kind, e.project) for e in recorded} == {
        (kinds.PROJECT_IDENTIFIED, "github.com/Owner/App"),
        (kinds.TOOL_USED, "github.com/Owner/App"),
    }


def test_a_root_is_said_to_be_anothers_once_and_again_when_that_changes(settings: Settings) -> None:
    folder = settings.identified_dir
    assert first_sight(folder, "/w/app", "/w/app") is None  # its own project: nothing to say
    marker = first_sight(folder, "/w/app", "github.com/Owner/App")  # a remote was added
    assert marker is not None
    mark(marker, "github.com/Owner/App")
    assert first_sight(folder, "/w/app", "github.com/Owner/App") is None
    marker = first_sight(folder, "/w/app", "/w/app")  # and taken away: its own again, said so
    assert marker is not None
    mark(marker, "/w/app")
    assert first_sight(folder, "/w/app", "/w/app") is None


def test_where_a_session_began_is_kept_whole_once_and_forgotten_after_a_month(settings: Settings) -> None:
    from workers.identify import forget_old_sessions

    folder = settings.sessions_dir
    assert kept_place(folder, "s1") is None
    assert keep_place(folder, "s1", ("github.com/Owner/App", "/w/app")) == ("github.com/Owner/App", "/w/app")
    assert keep_place(folder, "s1", ("/tmp", "/tmp")) == ("github.com/Owner/App", "/w/app")  # the first wins
    assert kept_place(folder, "s1") == ("github.com/Owner/App", "/w/app")
    [name] = os.listdir(folder)  # no temp file left
    with open(os.path.join(folder, name), "wb") as f:
        f.write(b"github.com/Own")  # what a crash mid-write would leave
    assert kept_place(folder, "s1") is None
    assert keep_place(folder, "s1", ("/w/b", "/w/b")) == ("/w/b", "/w/b")
    assert kept_place(folder, "s1") == ("/w/b", "/w/b")
    keep_place(folder, "s2", ("/w/c", "/w/c"))
    for odd in ("../..", "a/b\0c", "\udcff%2F", "#", "x" * 300, "."):  # any id a payload may hold
        assert keep_place(folder, odd, ("/w/\udcfe", "/w/\udcfe")) == ("/w/\udcfe", "/w/\udcfe")
        assert kept_place(folder, odd) == ("/w/\udcfe", "/w/\udcfe")
    assert os.listdir(os.path.dirname(folder)) == [os.path.basename(folder)]  # none went elsewhere
    month_ago = time.time() - 31 * 86400
    os.utime(os.path.join(folder, name), (month_ago, month_ago))
    assert forget_old_sessions(settings) == 1
    assert (kept_place(folder, "s1"), kept_place(folder, "s2")) == (None, ("/w/c", "/w/c"))


@pytest.mark.integration
def test_replay_moves_what_was_recorded_under_a_worktrees_path_to_its_repository(
    stack: Stack, env: dict[str, str], settings: Settings, tmp_path: Path
) -> None:
    from ingest.emit import append, encode
    from workers.redis_client import connect

    main = repository(tmp_path / "app")
    fix, docs = worktree(main, tmp_path / "app-fix"), worktree(main, tmp_path / "app-docs")

    def recorded_before(session: str, path: Path) -> None:
        """What a hook of before recorded: the worktree's path as its project, no worktree_root."""
        _, old = encode(
            kinds.PROMPT_SUBMITTED,
            {"session_id": session, "cwd": str(path / "lib"), "prompt": "why does x.ex fail?"},
            project=str(path),
            source=kinds.SOURCE_CLAUDE_CODE,
        )
        append(connect(settings), [old])

    def project_of(session: str) -> str | None:
        found = stack.query(f"select project from prompts where session_id = '{session}'")
        return str(found[0][0]) if found else None

    recorded_before("old", fix)
    assert wait_for(lambda: project_of("old"), what="the old prompt folded") == str(fix)
    done = subprocess.run([str(BIN), "replay"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{fix} -> {main}" in done.stderr
    wait_for(lambda: project_of("old") == str(main), what="the old prompt moved to its repository")
    assert (str(fix), str(main)) in stack.query("select root, project from project_roots")
    # `reverie up` does it too, as the stack starts
    recorded_before("older", docs)
    assert wait_for(lambda: project_of("older"), what="the other old prompt folded") == str(docs)
    stack.stop()
    stack.start()
    wait_for(lambda: project_of("older") == str(main), timeout=60, what="the stack to identify its path")
