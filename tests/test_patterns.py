"""Compiled patterns kept in the user's cache folder (ingest/patterns.py): a process that finds
them never imports `re`, and gets the very patterns `re` compiles, under every Python reverie
supports; an entry `_sre` refuses, or another build's file, costs `re`'s compile and nothing else."""

import _sre  # type: ignore[import-not-found]  # (typeshed has no stubs for it)
import ast
import json
import marshal
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

import pytest

from ingest import patterns
from ingest.envelope import compile_patterns
from ingest.redact import pattern_sources
from ingest.spool import spooled
from ingest.truncate import pattern_sources as cutting_sources
from schemas.events import decode_event
from schemas.settings import Settings
from tests.support.processes import wait_for
from tests.support.pythons import lowest_supported, supported_pythons

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = [*pattern_sources(), *cutting_sources()]
TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
# What the patterns are run on, to compare their matches with `re.compile`'s
TEXT = (
    f"export GITHUB_TOKEN={TOKEN} && curl -u bob:hunter22 https://x.io\napi_key: s3cr3tvalue\n"
    'key eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl s.x "password": "pw-123", [1, 2, 3]} ...'
)
PYTHONS = supported_pythons()

# Run as the hook runs (`-S -I`), under any Python, with ingest/patterns.py alone importable (it
# is standard library only), on the cache in $XDG_CACHE_HOME. Neither takes `json` (it imports
# `re`): marshal in, a literal out. STORE prints where it stored; LOAD whether it had to import
# `re`, then whether each pattern equals `re.compile`'s (Pattern equality compares the code),
# with its groups, and matches as it does.
_PREAMBLE = f"import marshal, sys\nsys.path.insert(0, {str(ROOT / 'ingest')!r})\nimport patterns\n"
STORE = _PREAMBLE + "print(repr(patterns.store(marshal.loads(sys.stdin.buffer.read()))))\n"
LOAD = (
    _PREAMBLE
    + """
sources, text = marshal.loads(sys.stdin.buffer.read())
found = [patterns.compiled(source) for source in sources]
imported = "re" in sys.modules
import re
def matches(p):
    return [(m.span(), m.groups()) for m in p.finditer(text)]
def same(p, q):
    return p == q and (p.groups, p.groupindex) == (q.groups, q.groupindex) and matches(p) == matches(q)
print(repr({"imported_re": imported, "same": [same(p, re.compile(s)) for p, s in zip(found, sources)]}))
"""
)


def run(
    script: str, cache: pathlib.Path, given: list[str] | tuple[list[str], str], python: str = sys.executable
) -> Any:
    """What `script` prints, run by `python` on the cache folder `cache`, given `given`."""
    ran = subprocess.run(
        [python, "-S", "-I", "-c", script],
        input=marshal.dumps(given, 4),  # a version every supported Python reads
        env={"XDG_CACHE_HOME": str(cache), "PATH": os.environ["PATH"]},
        capture_output=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr.decode()
    return ast.literal_eval(ran.stdout.decode())


def loaded(cache: pathlib.Path, sources: list[str], python: str = sys.executable) -> dict[str, object]:
    answer: dict[str, object] = run(LOAD, cache, (sources, TEXT), python)
    return answer


def found_all(sources: list[str]) -> dict[str, object]:
    return {"imported_re": False, "same": [True] * len(sources)}


def entries_in(path: pathlib.Path) -> dict[str, bytes]:
    key, entries = marshal.loads(path.read_bytes())
    assert key == (sys.implementation.cache_tag, sys.version, _sre.MAGIC)
    return dict(entries)


def test_the_pythons_found_are_the_supported_ones_this_one_among_them() -> None:
    assert sys.version in {p.build for p in PYTHONS}
    assert all(p.version[:2] >= lowest_supported() for p in PYTHONS)


@pytest.mark.parametrize("python", PYTHONS, ids=[p.name for p in PYTHONS])
def test_under_each_supported_python_a_process_finding_the_patterns_stored_never_imports_re(
    python: Any, tmp_path: pathlib.Path
) -> None:
    stored = pathlib.Path(run(STORE, tmp_path, SOURCES, python.executable))
    assert stored.parent == tmp_path / "reverie" / "patterns"
    assert stored.name.startswith("cpython-{}{}-".format(*python.version[:2]))
    assert loaded(tmp_path, SOURCES, python.executable) == found_all(SOURCES)


def test_each_python_keeps_a_file_of_its_own_beside_the_others(tmp_path: pathlib.Path) -> None:
    stored = {run(STORE, tmp_path, SOURCES[:2], p.executable) for p in PYTHONS}
    assert len(stored) == len(PYTHONS)  # two patch releases share `_sre`'s MAGIC, not a file
    for python in PYTHONS:
        assert loaded(tmp_path, SOURCES[:2], python.executable) == found_all(SOURCES[:2])


def test_a_process_stores_at_exit_what_it_had_to_compile(tmp_path: pathlib.Path) -> None:
    first = loaded(tmp_path, SOURCES[:3])
    assert first == {"imported_re": True, "same": [True] * 3}
    assert loaded(tmp_path, SOURCES[:3]) == found_all(SOURCES[:3])
    assert loaded(tmp_path, SOURCES[:4])["imported_re"] is True  # one it never stored


def test_a_damaged_cache_is_compiled_past_and_written_anew(tmp_path: pathlib.Path) -> None:
    path = pathlib.Path(str(patterns.cache_path({"XDG_CACHE_HOME": str(tmp_path)})))
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x00not marshal at all")
    assert loaded(tmp_path, SOURCES[:2]) == {"imported_re": True, "same": [True, True]}
    assert loaded(tmp_path, SOURCES[:2]) == found_all(SOURCES[:2])


def test_an_entry_sre_refuses_is_compiled_past_and_replaced_at_exit(tmp_path: pathlib.Path) -> None:
    path = pathlib.Path(
        str(patterns.store(SOURCES[:2], patterns.cache_path({"XDG_CACHE_HOME": str(tmp_path)})))
    )
    key, entries = marshal.loads(path.read_bytes())
    entries[SOURCES[0]] = marshal.dumps((0, [999999], 0, {}, (None,)))  # as a patch release might refuse
    path.write_bytes(marshal.dumps((key, entries)))
    assert loaded(tmp_path, SOURCES[:2]) == {"imported_re": True, "same": [True, True]}
    assert loaded(tmp_path, SOURCES[:2]) == found_all(SOURCES[:2])


def test_a_file_another_build_wrote_is_not_read(tmp_path: pathlib.Path) -> None:
    path = pathlib.Path(
        str(patterns.store(SOURCES[:2], patterns.cache_path({"XDG_CACHE_HOME": str(tmp_path)})))
    )
    (tag, version, magic), entries = marshal.loads(path.read_bytes())
    path.write_bytes(marshal.dumps(((tag, version.replace("(main", "(another build"), magic), entries)))
    assert loaded(tmp_path, SOURCES[:2])["imported_re"] is True
    assert loaded(tmp_path, SOURCES[:2]) == found_all(SOURCES[:2])


def test_only_entries_sre_turns_into_re_compiles_pattern_are_stored(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = patterns._entry

    def mistaken(source: str) -> Any:
        if source == SOURCES[2]:
            raise AttributeError("another Python's `re._parser`")
        return entry(SOURCES[1] if source == SOURCES[0] else source)  # code `_sre` takes, not re's

    monkeypatch.setattr(patterns, "_entry", mistaken)
    path = tmp_path / "patterns.marshal"
    assert patterns.store(SOURCES[:4], str(path)) == str(path)
    assert set(entries_in(path)) == {SOURCES[1], SOURCES[3]}


def test_storing_every_pattern_wanted_keeps_no_other(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "patterns.marshal"
    patterns.store(SOURCES[:3], str(path))
    patterns.store(SOURCES[3:4], str(path))  # another process's: what is there stays
    assert set(entries_in(path)) == set(SOURCES[:4])
    patterns.store(SOURCES[1:3], str(path), complete=True)  # as `reverie install` stores
    assert set(entries_in(path)) == set(SOURCES[1:3])


def test_a_store_removes_files_unused_for_a_month_beside_it(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "cpython-311-30b07f0-00000000.sre20220615.marshal"
    old, recent, other = (
        tmp_path / n for n in ("cpython-39-x.sre1.marshal", "cpython-312-y.sre2.marshal", "notes")
    )
    for sibling in (old, recent, other):
        sibling.write_bytes(b"")
    month_ago = time.time() - 31 * 24 * 3600
    os.utime(old, (month_ago, month_ago))
    os.utime(other, (month_ago, month_ago))
    assert patterns.store(SOURCES[:1], str(path)) == str(path)
    kept = sorted([path.name, recent.name, other.name, ".lock"])  # writers take turns by its lock
    assert sorted(p.name for p in tmp_path.iterdir()) == kept


def test_the_cache_is_in_the_users_cache_folder_named_for_the_full_version() -> None:
    name = os.path.basename(str(patterns.cache_path()))
    assert name.startswith(f"{sys.implementation.cache_tag}-{sys.hexversion:x}-")
    assert name.endswith(f".sre{_sre.MAGIC}.marshal")
    home = {"HOME": "/home/u"}
    assert patterns.cache_path({**home, "XDG_CACHE_HOME": "/x"}) == f"/x/reverie/patterns/{name}"
    assert patterns.cache_path({**home, "XDG_CACHE_HOME": "rel"}) == f"/home/u/.cache/reverie/patterns/{name}"
    assert patterns.cache_path(home) == f"/home/u/.cache/reverie/patterns/{name}"


def test_install_removes_the_caches_earlier_versions_kept_in_the_package(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    old = pathlib.Path(patterns.__file__).parent / "__pycache__" / "patterns.cpython-39.sre20171005.marshal"
    old.parent.mkdir(exist_ok=True)
    old.write_bytes(marshal.dumps({}))
    assert compile_patterns() is not None  # as `reverie install` does
    assert not old.exists()


def test_the_hook_redacts_a_payload_full_of_secrets_without_importing_re(
    home: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert str(compile_patterns()).startswith(str(tmp_path / "reverie" / "patterns"))  # as install does
    payload = {
        "session_id": "s1",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"export GITHUB_TOKEN={TOKEN} && curl -u bob:hunter22 https://x.io"},
        "tool_response": {"stdout": "api_key: s3cr3tvalue\nkey eyJhbGciOi s.x", "password": "pw-123"},
    }
    env = {
        "REVERIE_HOME": home,
        "REDIS_URL": f"unix://{home}/nobody.sock",
        "PATH": os.environ["PATH"],
        "XDG_CACHE_HOME": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "-S", "-I", "-X", "importtime", str(ROOT / "ingest" / "launcher.py"), "PostToolUse"],
        input=json.dumps(payload).encode(),
        env=env,
        capture_output=True,
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.decode().splitlines()}
    assert "ingest.patterns" in imported
    assert not imported & {"re", "re._parser", "re._compiler", "enum"}
    [path] = spooled(Settings(home).spool_dir)
    recorded = bytes(decode_event(open(path, "rb").read()).payload).decode()
    for secret in (TOKEN, "hunter22", "s3cr3tvalue", "pw-123"):
        assert secret not in recorded
    assert recorded.count("[REDACTED:") == 4


def waits_for_a_lock(pid: int) -> bool:
    """Whether process `pid` is blocked waiting for a file lock (/proc/locks marks waiters "->")."""
    with open("/proc/locks") as locks:
        return any("->" in line and f" {pid} " in line for line in locks)


def test_writers_take_turns_so_none_takes_out_what_another_stored(tmp_path: pathlib.Path) -> None:
    """A writer that read the file before another wrote it would write back what it read: the
    lock makes the second start from what the first wrote."""
    path = str(tmp_path / "cpython-311-30b07f0-00000000.sre20220615.marshal")
    import fcntl

    lock = os.open(str(tmp_path / ".lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)  # the first writer is under way
    second = subprocess.Popen(
        [sys.executable, "-c", f"from ingest import patterns; patterns.store({SOURCES[1:2]!r}, {path!r})"]
    )
    wait_for(lambda: waits_for_a_lock(second.pid), timeout=60, what="the second writer to wait its turn")
    assert patterns._write(path, {SOURCES[0]: patterns._verified(SOURCES[0]) or b""})
    os.close(lock)  # the first is done: the second reads what it wrote
    assert second.wait(60) == 0
    assert set(patterns._read(path)) == set(SOURCES[:2])
