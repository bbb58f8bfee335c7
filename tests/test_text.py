"""What recall ranks and extraction reads is the user's and the agent's own words: Claude Code's
wrappers, escapes, compaction prompts and interruption markers are left out, alike in Python
and in the SQL the projections run."""

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.folds.base import TEXT_MACROS
from schemas.text.harness import WRAPPERS, clean, harness_kind, is_noise

SAMPLES = [
    ("<command-name>/compact</command-name>\n<command-message>compact</command-message>", "", True),
    (
        "<local-command-stdout>\x1b[2mCompacted (ctrl+o to see full summary)\x1b[22m</local-command-stdout>",
        "",
        True,
    ),
    ("fix \x1b[31mthe\x1b[0m build", "fix the build", False),
    (
        "Your task is to create a detailed summary of the conversation so far, paying close attention",
        None,
        True,
    ),
    ("This session is being continued from a previous conversation that ran out of context.", None, True),
    ("[Request interrupted by user for tool use]", None, True),
    ("keep <system-reminder>ignore this</system-reminder>these words", "keep these words", False),
    ("why does <b>this</b> fail?", "why does <b>this</b> fail?", False),
]


@pytest.fixture(scope="module")
def db() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute(TEXT_MACROS)
    return connection


@pytest.mark.parametrize(("raw", "cleaned", "noise"), SAMPLES)
def test_wrappers_and_escapes_go_and_claude_codes_own_texts_are_noise(
    db: duckdb.DuckDBPyConnection, raw: str, cleaned: str | None, noise: bool
) -> None:
    assert is_noise(raw) is noise
    if cleaned is not None:
        assert clean(raw) == cleaned
    assert db.execute("SELECT clean_text(?), is_noise(?)", [raw, raw]).fetchone() == (clean(raw), noise)


pieces = st.sampled_from(
    [
        *(f"<{tag}>" for tag in WRAPPERS),
        *(f"</{tag}>" for tag in WRAPPERS),
        "\x1b[1m",
        "\x1b[0m",
        " ",
        "\n",
        "word",
    ]
)


SQL = duckdb.connect()
SQL.execute(TEXT_MACROS)


@settings(deadline=None)  # a busy machine's DuckDB may take a while: the texts are what is tested
@given(st.lists(st.one_of(pieces, st.text(max_size=5)), max_size=30).map("".join))
def test_python_and_sql_clean_alike(text: str) -> None:
    assert SQL.execute("SELECT clean_text(?), is_noise(?), harness_kind(?)", [text] * 3).fetchone() == (
        clean(text),
        is_noise(text),
        harness_kind(text),
    )


@pytest.mark.parametrize(
    ("said", "kind"),
    [
        ("Your task is to create a detailed summary of the conversation so far", "compaction_request"),
        ("This session is being continued from a previous conversation that ran out", "compaction_summary"),
        ("[Request interrupted by user for tool use]", "interruption"),
        ("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>", "task_notification"),
        ("Read the output file to retrieve the result: /tmp/claude-1000/tasks/b1.output", "output_pointer"),
        ("<command-name>/mcp</command-name>\n<command-message>mcp</command-message>", "command"),
        ("<local-command-stdout>Reconnected to tidewave.</local-command-stdout>", "command"),
        ("Base directory for this skill: /home/u/.claude/skills/beads", "skill"),
        ("continue until all are done", None),
        ("Read the docs, then tell me: retrieve the result how?", None),
    ],
)
def test_claude_codes_own_messages_are_told_by_kind_alike_in_sql(said: str, kind: str | None) -> None:
    assert harness_kind(said) == kind
    assert SQL.execute("SELECT harness_kind(?)", [said]).fetchone() == (kind,)
    assert is_noise(said) is (kind is not None)
