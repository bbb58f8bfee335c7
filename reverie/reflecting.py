"""`reverie reflect QUERY` (and the MCP tool memory_reflect): recall, then form an opinion.

The opinion is weighed from the evidence (workers/dynamics/reflect.py), shaped by the project's
disposition (`.reverie.toml` at its root, table `[reflect]`), and worded by extraction's LLM
when one is configured. It is recorded as an event: `opinion.formed` the first time,
`opinion.revised` when new evidence moves it; one above 0.9 also as an `observation.formed`,
flagged for CLAUDE.md. Its causes are the events behind the evidence, so `reverie why` explains
it. Like `reverie remember`, it reaches the stream, or the spool while the stack is down.
"""

import os
import tomllib

import msgspec

from ingest.emit import encode
from reverie.console import err, fail, out
from reverie.recalling import RecallFailed, find
from reverie.remembering import deliver
from schemas import kinds, memory
from schemas.recall import RecallRequest
from schemas.reflection import Disposition, Reflection
from schemas.settings import Settings
from workers.dynamics import REFLECT
from workers.dynamics.reflect import reflect, with_llm

DISPOSITION_FILE = ".reverie.toml"
_EVIDENCE = 20
_MOVED = 0.05  # a confidence that moves less than this leaves the opinion as it was


class BadDisposition(ValueError):
    pass


def disposition(root: str | None) -> Disposition:
    """The project's disposition: `[reflect]` of `.reverie.toml` at the root of the worktree,
    else (or with no root) the defaults."""
    if root is None:
        return Disposition()
    path = os.path.join(root, DISPOSITION_FILE)
    try:
        with open(path, "rb") as f:
            table = tomllib.load(f).get("reflect", {})
        return msgspec.convert(table, Disposition)
    except FileNotFoundError:
        return Disposition()
    except (OSError, tomllib.TOMLDecodeError, msgspec.ValidationError) as e:
        raise BadDisposition(f"{path}, [reflect]: {e} (skepticism, literalism, empathy: 1 to 5)") from None


def reflection(
    settings: Settings, query: str, project: str, source: str, root: str | None = None
) -> Reflection:
    """The opinion memory forms on `query` in `project`, recorded (see the module's docstring),
    shaped by the disposition of the worktree `root` (by default the project, if it is a folder)."""
    shaped = disposition(root if root is not None else project if os.path.isabs(project) else None)
    request = RecallRequest(prompt=query, project=project, limit=_EVIDENCE, dedup=True, answers_only=True)
    found = find(settings, request)
    known = _Known(settings)
    try:
        formed = reflect(query, project, found.results, shaped, known.confidence(query, project))
        formed = _worded(settings, formed, shaped, known, project)
        causes = known.events_behind([e.memory_id for e in [*formed.supporting, *formed.contradicting]])
    finally:
        known.close()
    if causes:
        _record(settings, formed, project, source, causes)
    return formed


def _worded(
    settings: Settings, formed: Reflection, shaped: Disposition, known: "_Known", project: str
) -> Reflection:
    from workers.llm.config import BadSettings, llm_settings

    try:
        llm = llm_settings(settings)
    except BadSettings as e:
        err.print(f"the LLM is misconfigured, so the evidence alone speaks: {e}")
        return formed
    if llm is None or not (formed.supporting or formed.contradicting):
        return formed
    worded, used = with_llm(llm, formed, shaped, known.tokens_today())
    causes = known.events_behind([e.memory_id for e in [*formed.supporting, *formed.contradicting]])
    if causes:
        event_id, data = encode(
            kinds.LLM_USED, used, project=project, source=kinds.SOURCE_CLI, caused_by=causes, worker=REFLECT
        )
        deliver(settings, event_id, data)
    return worded or formed


def _record(settings: Settings, formed: Reflection, project: str, source: str, causes: list[str]) -> None:
    before = formed.revised_from
    if before is None:
        events: list[tuple[str, msgspec.Struct]] = [
            (
                kinds.OPINION_FORMED,
                memory.OpinionFormed(
                    opinion_id=formed.opinion_id, statement=formed.statement, confidence=formed.confidence
                ),
            )
        ]
    elif abs(formed.confidence - before) >= _MOVED:
        reason = f"new evidence: {len(formed.supporting)} for, {len(formed.contradicting)} against"
        revised = memory.OpinionRevised(
            opinion_id=formed.opinion_id,
            statement=formed.statement,
            confidence=formed.confidence,
            reason=reason,
        )
        events = [(kinds.OPINION_REVISED, revised)]
    else:
        events = []
    if formed.promote:
        observed = memory.ObservationFormed(
            observation_id=formed.opinion_id.replace("opinion:", "observation:"),
            statement=formed.statement,
            confidence=formed.confidence,
        )
        events.append((kinds.OBSERVATION_FORMED, observed))
    for kind, payload in events:
        event_id, data = encode(
            kind, payload, project=project, source=source, caused_by=causes, worker=REFLECT, key=None
        )
        deliver(settings, event_id, data)


class _Known:
    """What the snapshot knows that reflection needs: the opinion already held, the events
    behind each memory, the LLM tokens spent today."""

    def __init__(self, settings: Settings) -> None:
        from projections.sql import connect

        self.db = connect(settings)

    def confidence(self, query: str, project: str) -> float | None:
        from workers.dynamics.reflect import opinion_id

        row = self.db.execute(
            "SELECT confidence FROM opinions WHERE opinion_id = ?", [opinion_id(project, query)]
        ).fetchone()
        return float(row[0]) if row else None

    def events_behind(self, memory_ids: list[str]) -> list[str]:
        from projections.sql import EVENTS_BEHIND

        if not memory_ids:
            return []
        rows = self.db.execute(EVENTS_BEHIND, {"ids": memory_ids}).fetchall()
        return [r[0] for r in rows if _is_event_id(r[0])]

    def tokens_today(self) -> int:
        row = self.db.execute(
            "SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM llm_usage "
            "WHERE day = CAST(timezone('UTC', now()) AS DATE)"
        ).fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        self.db.close()


def _is_event_id(value: str) -> bool:
    from schemas.ids import id_time_ms

    try:
        id_time_ms(value)
    except (ValueError, KeyError):
        return False
    return True


def shown(formed: Reflection) -> str:
    """The opinion as a person reads it: the statement, the confidence, the evidence each way."""
    lines = [f"{formed.statement}", f"confidence {formed.confidence:.2f} ({formed.formed_by})"]
    if formed.revised_from is not None:
        lines[-1] += f", was {formed.revised_from:.2f}"
    for title, side in (("for", formed.supporting), ("against", formed.contradicting)):
        if side:
            lines.append(f"{len(side)} {title}:")
            lines += [
                f"  - {' '.join(e.text.split())[:200]} ({e.kind}, {e.weight:.2f}; id {e.memory_id})"
                for e in side[:5]
            ]
    if formed.contradicting and formed.supporting:
        lines.append("memory contradicts itself here: see the evidence against")
    if formed.promote:
        lines.append("above 0.9: worth a line in CLAUDE.md's memory section")
    return "\n".join(lines)


def reflect_command(query: str, project: str, as_json: bool, root: str | None = None) -> int:
    settings = Settings.from_env()
    try:
        formed = reflection(settings, query, project, kinds.SOURCE_CLI, root=root)
    except (RecallFailed, BadDisposition) as e:
        return fail(str(e))
    if as_json:
        out.print_json(msgspec.json.encode(formed).decode())
    else:
        out.print(shown(formed), highlight=False, markup=False)
    return 0
