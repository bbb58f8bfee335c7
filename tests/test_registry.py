"""One registry of event kinds and memory tables: every kind has a payload Struct and a family,
every derived kind is folded by its family, the folds name no kind the registry does not know,
and what reads every kind or every memory table is generated from the registry, leaving none out."""

import re

import pytest

from projections import sql
from projections.folds import BY_FAMILY, READS, TABLES, base, runs_on
from reverie.cli.parser import parser
from schemas import kinds
from schemas.registry import DERIVED_KINDS, FAMILIES, KINDS, MEMORY_TABLES, Family, of_family
from schemas.settings import Settings


def folded_kinds(family: str) -> set[str]:
    """What `family`'s folds name as kinds: SQL strings shaped like one (`'fact.asserted'`)."""
    sql = "\n".join(text for _, text in BY_FAMILY[family].FOLDS)
    return set(re.findall(r"'([a-z_]+\.[a-z_]+)'", sql))


def test_every_family_has_its_folds() -> None:
    assert list(BY_FAMILY) == list(FAMILIES)


def test_every_kind_the_hook_records_is_registered() -> None:
    assert set(kinds.HOOK_KINDS.values()) <= set(KINDS)
    assert all(not KINDS[name].derived for name in kinds.HOOK_KINDS.values())


@pytest.mark.parametrize("family", FAMILIES)
def test_the_folds_name_only_registered_kinds(family: Family) -> None:
    assert folded_kinds(family) <= set(KINDS)
    assert folded_kinds(family) & set(of_family(family))  # and fold some of their own


def test_a_fold_runs_on_the_batches_holding_a_kind_it_reads() -> None:
    assert runs_on("facts", {kinds.FACT_SUPERSEDED, kinds.PROMPT_SUBMITTED})
    assert not runs_on("facts", {kinds.PROMPT_SUBMITTED, kinds.MEMORY_RETRIEVED})
    # the sessions fold reads every kind but the derived ones (`kind NOT IN (...)`)
    assert READS["sessions"] == frozenset(KINDS) - DERIVED_KINDS
    assert not runs_on("sessions", {kinds.FACT_ASSERTED}) and runs_on("sessions", {kinds.TOOL_USED})
    # a fold naming no kind runs on every batch, and a kind no one registered reaches every fold
    assert READS["tool_durations"] is None and runs_on("tool_durations", {kinds.FACT_ASSERTED})
    assert all(runs_on(fold, {"kind.from_a_newer_reverie"}) for fold in READS)


@pytest.mark.parametrize("kind", sorted(DERIVED_KINDS))
def test_every_derived_kind_is_folded_by_its_family(kind: str) -> None:
    assert kind in folded_kinds(KINDS[kind].family)


def test_what_reads_every_kind_and_every_memory_table_leaves_none_out(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    # a derived kind names its subject, a field of its payload that the provenance fold reads
    # (or, naming nothing by an id, is about nothing: what an LLM call cost)
    provenance = dict(base.FOLDS)["provenance"]
    for kind in (KINDS[name] for name in sorted(DERIVED_KINDS)):
        fields = set(kind.payload.__struct_fields__)
        if kind.subject is None:
            assert not [f for f in fields if f.endswith("_id")], f"{kind.name} names no subject"
        else:
            assert kind.subject in fields and f"payload->>'{kind.subject}'" in provenance, kind.name

    # a memory table: made by registered kinds, all derived (its id their subject) or all
    # observed (each row the event that recorded it, or naming the first that did)
    for table in MEMORY_TABLES.values():
        made = {KINDS[name].derived for name in table.made_by}
        assert len(made) == 1, table.name
        assert {KINDS[name].subject for name in table.made_by} == {table.id if table.derived else None}
        assert table.derived or (table.id == "event_id") != bool(table.first_event)

    # each holds one memory, in the columns it declares: memory_texts shows every one (held
    # everywhere where its scope says so), and the events behind each are its newest or itself
    db = sql.connect(settings)
    db.execute("INSERT INTO projections.sessions (session_id, project) VALUES ('s', 'p')")
    behind = {}
    for table in MEMORY_TABLES.values():
        columns = {row[0] for row in db.execute(f"DESCRIBE projections.{table.name}").fetchall()}
        values: dict[str, object] = {table.id: f"{table.name}:1", table.text: f"a memory of {table.name}"}
        besides = {"project": "p", "session_id": "s", "agent": "main", "confidence": 0.9}
        values |= {column: value for column, value in besides.items() if column in columns}
        if table.scope is not None:
            values[table.scope] = "global"
        if table.derived:
            values["updated_by"] = f"{table.name}:newest"
        assert set(values) <= columns, table.name
        marks = ", ".join("?" * len(values))
        db.execute(
            f"INSERT INTO projections.{table.name} ({', '.join(values)}) VALUES ({marks})", [*values.values()]
        )
        behind[f"{table.name}:1"] = str(values.get("updated_by", f"{table.name}:1"))
    shown = dict(db.execute("SELECT memory_id, project FROM memory_texts").fetchall())
    assert shown == {f"{t.name}:1": None if t.scope else "p" for t in MEMORY_TABLES.values()}
    found = db.execute(sql.EVENTS_BEHIND, {"ids": sorted(behind)}).fetchall()
    assert sorted(row[0] for row in found) == sorted(behind.values())
    db.close()

    # memory_texts reads the memory tables and, beside them, the sessions (a compaction's
    # project), the entities (a fact's words) and what was forgotten: no other
    view = sql.ANALYTICS_SQL.split("CREATE VIEW memory_texts AS")[1].split("CREATE VIEW")[0]
    read = set(re.findall(r"\b(?:FROM|JOIN)\s+(\w+)", view)) - set(re.findall(r"(\w+) AS \(", view))
    assert read - set(MEMORY_TABLES) == {"sessions", "entities", "forgotten", "file_versions"}

    # `reverie sql --help` names every table a reader sees
    with pytest.raises(SystemExit):
        parser().parse_args(["sql", "--help"])
    said = set(re.findall(r"\w+", capsys.readouterr().out))
    assert {name for tables in TABLES.values() for name in tables} | set(MEMORY_TABLES) <= said
