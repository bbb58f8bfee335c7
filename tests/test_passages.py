"""What a session showed and said becomes passages recall can give: each tool's use read as what
was run or opened and what it showed, cut on lines, each passage saying where it comes from; the
same content once; a file's newer version in place of its older one."""

from typing import Any

from projections.sql import connect
from reverie.testing import Folding
from schemas import kinds
from schemas.settings import Settings
from schemas.text.passages import MAX_PASSAGES, PASSAGE_CHARS, said_passages, tool_passages
from tests.support.events import observed, rows

CWD = "/home/me/shop"


def used(tool: str, given: dict[str, Any], answer: Any) -> dict[str, Any]:
    return {"tool_name": tool, "tool_input": given, "tool_response": answer, "cwd": CWD}


def read(path: str, content: str, **file: Any) -> dict[str, Any]:
    return used(
        "Read", {"file_path": path}, {"type": "text", "file": {"filePath": path, "content": content, **file}}
    )


PACKAGE = '{\n  "name": "shop",\n  "scripts": {\n    "test": "vitest run"\n  }\n}'


def test_a_file_read_is_its_path_and_its_text_keyed_by_the_file() -> None:
    (passage,) = tool_passages(read(f"{CWD}/assets/package.json", PACKAGE), failed=False)
    assert passage.text == f"Read assets/package.json:\n{PACKAGE}"
    assert (passage.action, passage.source, passage.key) == (
        "read",
        "assets/package.json",
        f"file:{CWD}/assets/package.json",
    )


def test_a_part_of_a_file_is_no_version_of_it_and_claude_codes_line_numbers_are_dropped() -> None:
    numbered = used(
        "Read", {"file_path": f"{CWD}/a.py", "offset": 40}, "    40→def f():\n    41→    return 1"
    )
    (passage,) = tool_passages(numbered, failed=False)
    assert passage.text == "Read a.py (from line 40):\ndef f():\n    return 1"
    assert passage.key == ""


def test_a_long_file_is_cut_on_its_lines_each_passage_headed() -> None:
    lines = [f"line {n}: " + "x" * 60 for n in range(600)]
    found = tool_passages(read(f"{CWD}/big.txt", "\n".join(lines)), failed=False)
    assert len(found) == MAX_PASSAGES
    assert all(len(p.text) <= PASSAGE_CHARS and p.text.startswith("Read big.txt:\n") for p in found)
    body = [line for p in found for line in p.text.split("\n")[1:]]
    assert body == lines[: len(body)]  # whole lines, in order, none lost between passages
    assert len({p.version for p in found}) == 1 and [p.part for p in found] == list(range(MAX_PASSAGES))


def test_a_command_says_its_exit_status_and_the_lines_that_matter_first() -> None:
    output = "\n".join(
        [
            *(f"compiling module {n}" for n in range(200)),
            "FAILED tests/test_a.py::test_x",
            "1 failed, 9 passed",
        ]
    )
    failed = {**used("Bash", {"command": "pytest -q"}, None), "error": f"Exit code 1\n{output}"}
    found = tool_passages(failed, failed=True)
    first = found[0].text.split("\n")
    assert first[0] == "Ran pytest -q (exit 1):"
    assert "1 failed, 9 passed" in first and "FAILED tests/test_a.py::test_x" in first
    assert "compiling module 3" not in first  # the rest is in the passages after it
    assert any("compiling module 3" in p.text for p in found[1:])


def test_a_short_command_output_is_one_passage() -> None:
    answer = {"stdout": "v20.11.0", "stderr": "", "interrupted": False}
    assert [
        p.text for p in tool_passages(used("Bash", {"command": "node --version"}, answer), failed=False)
    ] == ["Ran node --version (exit 0):\nv20.11.0"]


def test_an_edit_a_search_an_answer_and_a_failure() -> None:
    edit = used("Edit", {"file_path": f"{CWD}/a.py", "old_string": "x = 1", "new_string": "x = 2"}, {})
    assert [(p.text, p.key) for p in tool_passages(edit, failed=False)] == [
        ("Edited a.py:\nx = 2", f"edit:{CWD}/a.py")
    ]
    grep = used(
        "Grep",
        {"pattern": "vitest", "path": CWD},
        {"mode": "files_with_matches", "filenames": [f"{CWD}/a.ts"]},
    )
    assert [p.text for p in tool_passages(grep, failed=False)] == [f"Searched for vitest in {CWD}:\na.ts"]
    asked = used("AskUserQuestion", {}, {"answers": {"Which test runner?": "Vitest"}})
    assert [p.text for p in tool_passages(asked, failed=False)] == [
        "Asked the user's answers:\nWhich test runner? Vitest"
    ]
    failed = {**used("Read", {"file_path": f"{CWD}/gone.py"}, None), "error": "File does not exist."}
    assert [p.text for p in tool_passages(failed, failed=True)] == [
        "Failed: Read gone.py:\nFile does not exist."
    ]
    assert tool_passages(used("TodoWrite", {"todos": []}, {"newTodos": []}), failed=False) == []


def test_what_the_agent_said_is_its_own_words_and_what_it_is_about_to_do_is_nothing() -> None:
    assert [p.text for p in said_passages("The tests use Vitest.\n\nNext, the CSS.")] == [
        "The tests use Vitest.\n\nNext, the CSS."
    ]
    assert said_passages("Perfect! Now let me check the existing test for sync_transcripts.") == []
    assert said_passages("Let's add test configuration to disable tracing by default:") == []
    assert said_passages("Now add spans to join:") == said_passages("Commit and close:") == []
    assert said_passages("Root cause found:") == []
    kept = "The pre-commit hook runs dialyzer, which flags a false positive in the OTEL types:"
    assert [p.text for p in said_passages(kept)] == [kept]
    found = said_passages("309 tests (was 297), all passing. Let me run the full quality gate:")
    assert [p.text for p in found] == ["309 tests (was 297), all passing. Let me run the full quality gate:"]


def shown(settings: Settings) -> list[tuple[str, str]]:
    """What recall is shown of passages and of what was said, as the readers' views have it."""
    db = connect(settings)
    try:
        return rows(db, "SELECT kind, text FROM memory_texts WHERE kind IN ('passage', 'said') ORDER BY text")
    finally:
        db.close()


def test_passages_fold_once_and_a_files_newer_version_replaces_the_older(
    folding: Folding, settings: Settings
) -> None:
    path = f"{CWD}/package.json"
    old, new = PACKAGE, PACKAGE.replace("vitest run", "jest")
    db = folding.fold(
        [
            observed(kinds.TOOL_USED, 1, **read(path, old)),
            observed(kinds.TOOL_USED, 2, **read(path, old)),  # the same content again: one passage
            observed(kinds.ASSISTANT_SAID, 3, text="The tests run with vitest."),
        ]
    )
    assert rows(db, "SELECT times_seen FROM passages WHERE action = 'read'") == [(2,)]
    assert shown(settings) == [
        ("passage", f"Read package.json:\n{old}"),
        ("said", "The tests run with vitest."),
    ]

    edit = used("Edit", {"file_path": path, "old_string": "jest", "new_string": "vitest"}, {})
    folding.fold([observed(kinds.TOOL_USED, 4, **read(path, new)), observed(kinds.TOOL_USED, 5, **edit)])
    assert [t for _, t in shown(settings)] == [
        "Edited package.json:\nvitest",
        f"Read package.json:\n{new}",
        "The tests run with vitest.",
    ]

    folding.fold([observed(kinds.TOOL_USED, 6, **read(path, old))])  # read whole after the edit
    assert [t for _, t in shown(settings)] == [f"Read package.json:\n{old}", "The tests run with vitest."]
