"""What becomes of a fact when it is asserted again, or contradicted: how a fact settles.

Extraction proposes facts; this settles each one against what memory already holds in its
project (the projections' snapshot) and what the same job proposed before it:

- **A duplicate strengthens.** Its words (as recall reads them: projections/recall/words.py)
  overlap an existing fact's by a Jaccard index over 0.75 and their embeddings' cosine is over
  0.92: instead of a new fact, the existing one is reconsolidated, with more evidence (its
  confidence rises, or falls when the restatement hedges: "maybe", "I think", "peut-être").
- **A contradiction supersedes, never deletes.** A statement of change ("now uses", "switch
  from X to Y", "no longer", "instead of", "désormais") ends the fact it replaces: the fact that
  names X, or else the closest standing fact in the same slot (same subject and relation) whose
  cosine reaches 0.3. The old fact gets a `fact.superseded`: its `invalid_at` is when the new one
  was said, and it points to its replacement; `facts_as_of` still finds it before then.
- **At most 5 versions.** A fact is reconsolidated at most 4 times after its assertion; episodic
  facts (what happened, once) never change: a restatement of one adds nothing.
- **A replacement stands as said.** A fact a supersession in the same job names as what holds
  now (the user's correction: `fact.superseded` of the wrong fact, then its replacement) is
  asserted in its own words and id, never taken for a restatement of another fact; the fact it
  ends stands no more for what follows.

The cosine is asked for only where the words already agree, or a change is stated: most
batches need no model. What settles a fact depends on the snapshot the job read, so the same
batch settled later may settle otherwise; the ids of what it emits still follow from the
worker, the causes and the facts involved (ingest/emit.py).
"""

import re
from collections.abc import Callable, Iterable, Iterator, Sequence

import duckdb
import msgspec

from projections.folds import current
from projections.recall.words import jaccard, terms, word_set
from schemas import kinds, memory
from workers.thinking.follower import Derived

# the cosine of `text` with each of `others`, from the embedder's model
Cosine = Callable[[str, Sequence[str]], Sequence[float]]

DUPLICATE_JACCARD = 0.75  # of content words: a rule's few words said again, and one more
DUPLICATE_COSINE = 0.92
SAME_SLOT_COSINE = 0.3
MAX_VERSIONS = 5
_STEP = 0.25  # how far one piece of evidence moves a confidence towards 1 (or 0)

_HEDGED = re.compile(
    r"\b(?:maybe|perhaps|probably|might|i think|i guess|not sure|peut-être|je crois|sans doute)\b", re.I
)
# "from now on" sets a rule, it does not say what it ends
_CHANGE = re.compile(
    r"\b(?:(?<!from )now|no longer|not anymore|any ?more|instead|replac(?:e|es|ed|ing)|switch(?:ed|es|ing)?|"
    r"migrat(?:e|ed|es|ing)|moved?\s+(?:from|to)|(?<!partir de )maintenant|au lieu de|à la place|"
    r"ne\s+\S+\s+plus|n'\S+\s+plus)\b",
    re.IGNORECASE,
)
# what a change names as gone: "from X (to ...)", "instead of X", "no longer use X", "replace X"
_OLD = re.compile(
    r"\b(?:from|instead of|au lieu de|plutôt que|no longer (?:use|uses|using)|replac(?:e|es|ed|ing))\s+"
    r"(?P<old>.+?)(?=\s+(?:to|by|with|par|vers|for)\b|[,.;:!?]|$)",
    re.IGNORECASE,
)
# relations that state how things stand (a change can end them); the rest record what happened
_STANDING = frozenset(
    {"uses", "integrates", "built_with", "depends_on", "decided_for", "prefers", "learned_that"}
)


class StandingFact(msgspec.Struct, frozen=True, kw_only=True):
    """A standing fact of the project, as the snapshot holds it."""

    fact_id: str
    source: str
    relation: str
    target: str | None = None
    description: str
    confidence: float
    memory_type: str
    versions: int  # its assertion and its reconsolidations


def standing_facts(db: duckdb.DuckDBPyConnection, project: str) -> list[StandingFact]:
    """The facts of `project` that stand in the snapshot `db`."""
    rows = db.execute(
        f"""
        SELECT fact_id, source, relation, target, description, confidence, memory_type,
            1 + reconsolidations AS versions
        FROM facts f
        WHERE project = ? AND {current("f")}
        ORDER BY fact_id
        """,
        [project],
    )
    names = [column[0] for column in rows.description]
    return [StandingFact(**dict(zip(names, row, strict=True))) for row in rows.fetchall()]


def settle(
    found: Iterable[Derived], known: Callable[[str], Sequence[StandingFact]], cosine: Cosine
) -> Iterator[Derived]:
    """`found` as memory should take it, given the `known` facts of each project: each proposed
    fact asserted, or turned into a reconsolidation of the fact it repeats; each change
    followed by the supersession of the fact it ends, each fix by the end of the block it
    solves. Other derived events pass unchanged."""
    projects: dict[str, dict[str, StandingFact]] = {}
    replacements: set[tuple[str, str]] = set()  # (project, fact): what a supersession said holds now

    def standing(project: str) -> dict[str, StandingFact]:
        if project not in projects:
            projects[project] = {k.fact_id: k for k in known(project)}
        return projects[project]

    for derived in found:
        fact = derived.payload
        if derived.kind == kinds.FACT_SUPERSEDED and isinstance(fact, memory.FactSuperseded):
            standing(derived.project).pop(fact.fact_id, None)
            if fact.by_fact_id is not None:
                replacements.add((derived.project, fact.by_fact_id))
        if derived.kind != kinds.FACT_ASSERTED or not isinstance(fact, memory.FactAsserted):
            yield derived
            continue
        replacing = (derived.project, fact.fact_id) in replacements
        yield from _settled(derived, fact, standing(derived.project), cosine, replacing)


def _settled(
    derived: Derived,
    fact: memory.FactAsserted,
    standing: dict[str, StandingFact],
    cosine: Cosine,
    replacing: bool = False,
) -> Iterator[Derived]:
    """One proposed fact settled against the project's `standing` facts (kept up to date);
    `replacing`: it replaces a fact a supersession ended, and stands as said."""
    if fact.fact_id in standing:  # said again word for word: more evidence of the same fact
        yield derived
        by = fact.fact_id
    elif not replacing and (same := _duplicate(fact, standing.values(), cosine)) is not None:
        if same.memory_type != "episodic" and same.versions < MAX_VERSIONS:
            again = _strengthened(same, fact)
            standing[same.fact_id] = msgspec.structs.replace(
                same, confidence=again.confidence or same.confidence, versions=same.versions + 1
            )
            key = f"{same.fact_id}+{fact.fact_id}"
            yield msgspec.structs.replace(derived, kind=kinds.FACT_RECONSOLIDATED, payload=again, key=key)
        by = same.fact_id
    else:
        yield derived
        for old in _replaced(fact, standing.values(), cosine) if _CHANGE.search(fact.description) else []:
            del standing[old.fact_id]
            yield _superseded(old, fact.fact_id, fact, derived)
        standing[fact.fact_id] = StandingFact(
            fact_id=fact.fact_id,
            source=fact.source,
            relation=fact.relation,
            target=fact.target,
            description=fact.description,
            confidence=fact.confidence,
            memory_type=fact.memory_type,
            versions=1,
        )
        by = fact.fact_id
    for old in _unblocked(fact, standing.values()):  # a fix said again ends a block as well
        del standing[old.fact_id]
        yield _superseded(old, by, fact, derived)


def _duplicate(
    fact: memory.FactAsserted, standing: Iterable[StandingFact], cosine: Cosine
) -> StandingFact | None:
    said = word_set(fact.description)
    close = [k for k in standing if jaccard(said, word_set(k.description)) > DUPLICATE_JACCARD]
    if not close:
        return None
    scores = cosine(fact.description, [k.description for k in close])
    best = max(range(len(close)), key=lambda i: scores[i])
    return close[best] if scores[best] > DUPLICATE_COSINE else None


def _strengthened(same: StandingFact, fact: memory.FactAsserted) -> memory.FactReconsolidated:
    """The reconsolidation a restatement of `same` brings."""
    hedged = bool(_HEDGED.search(fact.description)) and not _HEDGED.search(same.description)
    confidence = (
        same.confidence - _STEP * same.confidence
        if hedged
        else same.confidence + _STEP * (1 - same.confidence)
    )
    return memory.FactReconsolidated(
        fact_id=same.fact_id,
        confidence=round(confidence, 6),
        reason=f"{'restated with doubt' if hedged else 'restated'}: {fact.description}",
    )


def _replaced(
    fact: memory.FactAsserted, standing: Iterable[StandingFact], cosine: Cosine
) -> list[StandingFact]:
    """The standing facts a statement of change ends: those naming what it says is gone, or
    else the closest one in its slot."""
    candidates = [k for k in standing if k.memory_type != "episodic" and k.relation in _STANDING]
    named = [set(terms(m.group("old"))) for m in _OLD.finditer(fact.description)]
    if named := [n for n in named if n]:
        return [k for k in candidates if any(len(n & set(terms(k.description))) * 2 >= len(n) for n in named)]
    slot = [k for k in candidates if k.source == fact.source and k.relation == fact.relation]
    if not slot:
        return []
    scores = cosine(fact.description, [k.description for k in slot])
    best = max(range(len(slot)), key=lambda i: scores[i])
    return [slot[best]] if scores[best] >= SAME_SLOT_COSINE else []


def _unblocked(fact: memory.FactAsserted, standing: Iterable[StandingFact]) -> list[StandingFact]:
    """The blocks a fix ends: the standing `blocked_by` facts about the error it solves, the
    error's entity (the tools'), or its title (a summary's "X (UNRESOLVED): ..." and a later
    one's "X: fixed by ...")."""
    if fact.relation != "solved_by":
        return []
    titled = _title(fact.description)
    return [
        k
        for k in standing
        if k.relation == "blocked_by"
        and (
            k.target == fact.source
            or (
                k.target is None and k.source == fact.source and jaccard(_title(k.description), titled) >= 0.5
            )
        )
    ]


def _title(description: str) -> frozenset[str]:
    """What an error is called: a bullet's words before its first colon, but for the words that
    say whether it is solved."""
    return word_set(description.split(":", 1)[0]) - _UNSOLVED_WORDS


_UNSOLVED_WORDS = word_set("unresolved current still failing not yet fixed resolved")


def _superseded(old: StandingFact, by: str, fact: memory.FactAsserted, derived: Derived) -> Derived:
    """The end of `old`, which the fact `by` stands for now (`fact`: what was said)."""
    ended = memory.FactSuperseded(
        fact_id=old.fact_id,
        by_fact_id=by,
        invalid_at=fact.valid_at,  # None: when the new one was said (the event's time)
        reason=f"superseded: {fact.description}",
    )
    key = f"{old.fact_id}>{by}"
    return msgspec.structs.replace(derived, kind=kinds.FACT_SUPERSEDED, payload=ended, key=key)
