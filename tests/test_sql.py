import csv
import io
import json
import subprocess

import pytest

from ingest.dead_letters import write_dead_letter
from projections.event_log import EventLog
from projections.sql import connect, query
from reverie.console import TABLE_ROWS
from schemas.events import decode_event
from schemas.settings import Settings
from tests.support.events import event
from tests.support.processes import BIN, typed


def test_the_views_exist_on_an_empty_home(settings: Settings) -> None:
    db = connect(settings)
    assert query(db, "select count(*) from events").rows == [(0,)]
    assert query(db, "select count(*) from dead_letters").rows == [(0,)]
    assert "payload" in query(db, "select * from events").columns


def test_events_and_their_payload_json_are_queryable(settings: Settings) -> None:
    log = EventLog(settings.event_log_dir)
    log.append([decode_event(event(f"prompt {i}")[1]) for i in range(3)])
    log.append([decode_event(event("later")[1])])
    write_dead_letter(settings.dead_letter_dir, "hook", "not JSON", b"garbage")
    db = connect(settings)
    rows = query(db, "select payload->>'prompt' from events").rows
    assert sorted(r[0] for r in rows) == ["later", "prompt 0", "prompt 1", "prompt 2"]
    assert query(db, "select stage, reason, head from dead_letters").rows == [("hook", "not JSON", "garbage")]


def test_the_command_prints_json_csv_and_clear_errors(settings: Settings, env: dict[str, str]) -> None:
    EventLog(settings.event_log_dir).append([decode_event(event("hello")[1])])
    sql = "select kind, payload->>'prompt' as prompt from events"
    as_json = subprocess.run(
        [str(BIN), "sql", sql, "--json"], env=env, capture_output=True, text=True, check=True
    )
    assert [json.loads(line) for line in as_json.stdout.splitlines()] == [
        {"kind": "prompt.submitted", "prompt": "hello"}
    ]
    as_csv = subprocess.run(
        [str(BIN), "sql", sql, "--csv"], env=env, capture_output=True, text=True, check=True
    )
    assert list(csv.reader(io.StringIO(as_csv.stdout))) == [["kind", "prompt"], ["prompt.submitted", "hello"]]
    bad = subprocess.run(
        [str(BIN), "sql", "select nope from events"], env=env, capture_output=True, text=True
    )
    assert bad.returncode == 1
    assert "nope" in bad.stderr and "Traceback" not in bad.stderr


def test_csv_lines_end_with_a_line_feed(settings: Settings, env: dict[str, str]) -> None:
    EventLog(settings.event_log_dir).append([decode_event(event("hello")[1])])
    sql = "select kind, payload->>'prompt' as prompt from events"
    as_csv = subprocess.run([str(BIN), "sql", sql, "--csv"], env=env, capture_output=True, check=True)
    assert as_csv.stdout == b"kind,prompt\nprompt.submitted,hello\n"


@pytest.mark.parametrize("fmt", ["", "--csv", "--json"])
def test_sql_into_head_ends_quietly_with_the_status_of_a_writer_cut_off(
    env: dict[str, str], fmt: str
) -> None:
    rows = "select repeat(chr(120), 70) from range(30000)"  # far more than a pipe holds, even as a table
    shell = f"set -o pipefail; '{BIN}' sql '{rows}' {fmt} | head -n 1"
    piped = subprocess.run(["bash", "-c", shell], env=env, capture_output=True, text=True, timeout=120)
    assert piped.stderr == ""  # no BrokenPipeError, no traceback
    assert piped.returncode == 128 + 13  # as `yes | head` under pipefail: SIGPIPE's, not an error's
    assert len(piped.stdout.splitlines()) == 1


def test_a_table_shows_its_first_rows_and_says_how_to_see_them_all(env: dict[str, str]) -> None:
    rows = "select range as n from range(5000)"
    table = subprocess.run([str(BIN), "sql", rows], env=env, capture_output=True, text=True, check=True)
    shown = [line.strip("│ ") for line in table.stdout.splitlines() if line.startswith("│")]
    assert shown == list(map(str, range(TABLE_ROWS)))
    assert "the first 1,000 of 5,000 rows" in table.stdout and "--csv" in table.stdout
    as_csv = subprocess.run(
        [str(BIN), "sql", rows, "--csv"], env=env, capture_output=True, text=True, check=True
    )
    assert as_csv.stdout.splitlines() == ["n", *map(str, range(5000))]  # programs get every row


def test_a_row_too_wide_for_80_columns_prints_as_a_record(settings: Settings, env: dict[str, str]) -> None:
    [hello] = [decode_event(event("hello [bold]there[/bold] in [/tmp]")[1])]
    EventLog(settings.event_log_dir).append([hello])

    def sql(query: str) -> list[str]:
        done = subprocess.run(
            [str(BIN), "sql", query], env={**env, "COLUMNS": "80"}, capture_output=True, text=True, check=True
        )
        return done.stdout.splitlines()

    wide = sql("select * from events")  # eleven columns
    assert all(len(line) <= 80 for line in wide) and not any("…" in line for line in wide)
    fields = {line.split()[0]: line.split()[1:] for line in wide[1:-1] if line[:1] != " "}
    assert fields["id"] == [hello.id] and fields["kind"] == ["prompt.submitted"]
    assert "hello [bold]there[/bold] in [/tmp]" in " ".join(wide)  # as it is, never read as markup
    assert wide[0].startswith("record 1 ") and wide[-1] == "1 row"
    narrow = sql("select kind, count(*) as n from events group by kind")
    assert any(line.split() == ["│", "prompt.submitted", "│", "1", "│"] for line in narrow)  # a table


def test_the_shell_runs_statements_over_lines_and_survives_errors(
    settings: Settings, capsys: "pytest.CaptureFixture[str]"
) -> None:
    from reverie.shell import run_shell

    EventLog(settings.event_log_dir).append([decode_event(event("hello")[1])])
    lines = ["select count(*) AS n", "from events;", "select nope;", ".tables", "select 42 AS answer;"]
    assert run_shell(settings, typed(lines)) == 0
    captured = capsys.readouterr()
    assert "│ 1 │" in captured.out.replace(" ", " ")  # the count, in its table
    assert "nope" in captured.err  # the error, and the shell went on
    assert "facts_current" in captured.out and "42" in captured.out
