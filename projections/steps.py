"""A session's steps, from the snapshot's tables, as schemas/outcomes.py reads them: what a new
or resumed session is told of the errors the last one left (its blockers) and of those it
solved, and what a stash calls its open threads. The same reading as the episode's
(workers/extraction/steps.py reads the events), from what the tables hold: each tool use that
ran (`tool_uses`; a command by its program and subcommand), its error (`errors`), the passages
of a command that passed (a check whose output says it failed failed, though a pipe lost its
status; a run that printed what an earlier one did, whose passages are that one's, is read as
it), a `git commit` that passed as a commit, and the user's own prompts (`prompts`).

One indexed read of the session's rows: a few milliseconds, on the hook's path at SessionStart.
"""

import duckdb

from schemas import outcomes
from schemas.outcomes import Reading, Step
from schemas.text.commands import command_key, failed_by_its_output, shown
from schemas.text.harness import clean

_BLOCKERS = 3  # told, the last ones first
_SOLVED = 3

_STEPS = """
SELECT event_id, tool, said, outcome, text FROM (
    SELECT t.event_id, t.ts, t.tool, coalesce(t.input_summary, '') AS said, t.outcome,
        coalesce(e.error, p.output, '') AS text
    FROM tool_uses t
    LEFT JOIN errors e USING (event_id)
    LEFT JOIN (
        SELECT event_id, string_agg(text, chr(10) ORDER BY part) AS output FROM passages
        WHERE session_id = $session AND action = 'ran' GROUP BY event_id
    ) p USING (event_id)
    WHERE t.session_id = $session AND t.outcome <> 'cancelled'
    UNION ALL
    SELECT event_id, ts, NULL, coalesce(clean, ''), 'said', NULL FROM prompts
    WHERE session_id = $session AND agent = 'main'
) ORDER BY ts, event_id"""


def steps(db: duckdb.DuckDBPyConnection, session_id: str) -> list[Step]:
    """The steps of `session_id` as the snapshot `db` holds them, in order."""
    found: list[Step] = []
    printed: dict[str, bool] = {}  # whether each command's last run that passed printed a failure
    for event_id, tool, said, outcome, text in db.execute(_STEPS, {"session": session_id}).fetchall():
        if outcome == "said":
            found.append(Step("said", event_id, text=said))
        elif tool == "Bash":
            key = command_key(said)
            if not key:
                continue
            failed = outcome == "error" or failed_by_its_output(key, text)
            if outcome == "ok" and not text:  # it printed what an earlier run did: a passage is kept once
                failed = printed.get(said, False)
            if outcome == "ok":
                printed[said] = failed
            found.append(Step("ran", event_id, key, failed, clean(text), shown(said, key)))
            if key == "git commit" and not failed:
                found.append(Step("committed", event_id))
        elif (target := outcomes.target(tool or "", said)) is not None:
            failed = outcome == "error"
            error = clean(text) if failed else ""
            found.append(Step("used", event_id, target, failed, error, outcomes.shown(tool or "", said)))
    return found


def reading(db: duckdb.DuckDBPyConnection, session_id: str) -> Reading:
    """What the session's steps say (schemas/outcomes.py)."""
    return outcomes.read(steps(db, session_id))


def blockers(found: Reading) -> list[str]:
    """The errors nothing after them shows solved, as lines: the last ones first."""
    return [e.told() for e in reversed(found.blockers)][:_BLOCKERS]


def solved(found: Reading) -> list[str]:
    """The errors the session solved, each with what solved it: the last ones first."""
    return [e.told() for e in reversed(found.solved)][:_SOLVED]
