"""What recall ranks and extraction reads is the user's and the agent's own words: Claude Code's
wrappers, escapes, compaction prompts and interruption markers are left out, alike in Python
and in the SQL the projections run."""

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.sql import TEXT_MACROS
from schemas.text import WRAPPERS, clean, is_noise

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


@given(st.lists(st.one_of(pieces, st.text(max_size=5)), max_size=30).map("".join))
def test_python_and_sql_clean_alike(text: str) -> None:
    connection = duckdb.connect()
    connection.execute(TEXT_MACROS)
    assert connection.execute("SELECT clean_text(?), is_noise(?)", [text, text]).fetchone() == (
        clean(text),
        is_noise(text),
    )
