"""Deterministic extraction against hand labels: precision and recall of facts and entities on
the labelled fixture transcripts (tests/data/extraction_labels.json: five transcripts, each read
with its subagents as one session), from all that extraction derives from them (its batches'
and its finished sessions'), each label at its transcript line.

Recall: a labelled fact is found when one extracted fact holds all its `match` keywords (in
its description or its endpoints' names); recall = labelled facts found / labelled facts.
Precision: an extracted fact is right when it holds all the keywords of some labelled fact or
of some `also_true` label (a fact a careful reader agrees is true and worth keeping, though not
required for recall: the other dependencies of a manifest the agent read, the files it edited,
the concepts a compaction summary names that the transcript bears out...); precision = right
extracted facts / extracted facts, so an extraction matching neither list counts as wrong. An
entity is found when an extracted entity has its name (or an alias). The session's events are
its transcript and its subagents' (its compaction summaries among them), imported as `reverie
import` does. Prints one JSON line: the totals, then each transcript's counts and its own
precision and recall (null where there is nothing to divide by).

    python benchmarks/extraction_quality.py
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from ingest.transcripts import ImportedEvent, find_transcripts, read_transcript  # noqa: E402
from reverie.testing import imported_event  # noqa: E402
from schemas import memory  # noqa: E402
from schemas.events import Event  # noqa: E402
from workers.extraction.derive import derive, derive_session  # noqa: E402
from workers.extraction.episodes import episodes  # noqa: E402

TRANSCRIPTS = os.path.join(HERE, "..", "..", "shared", "fixtures", "claude-code", "transcripts")
LABELS = os.path.join(HERE, "..", "tests", "data", "extraction_labels.json")


def session_events(name: str) -> list[Event]:
    """The events of a transcript and of its subagents' transcripts."""
    paths = [os.path.join(TRANSCRIPTS, name)]
    subagents = os.path.join(TRANSCRIPTS, name.removesuffix(".jsonl"))
    if os.path.isdir(subagents):
        paths += find_transcripts(subagents)
    return [
        imported_event(i) for path in paths for i in read_transcript(path) if isinstance(i, ImportedEvent)
    ]


def score(labelled: dict[str, object]) -> dict[str, object]:
    events = session_events(str(labelled["file"]))
    payloads = [d.payload for d in [*derive(events), *derive_session(events)]]
    entities = {p.entity_id: p for p in payloads if isinstance(p, memory.EntityObserved)}
    facts = {p.fact_id: p for p in payloads if isinstance(p, memory.FactAsserted)}

    def said(fact: memory.FactAsserted) -> str:
        ends = [entities[e].name for e in (fact.source, fact.target) if e in entities]
        return " ".join([fact.description, *ends]).lower()

    def keywords(labels: object) -> list[list[str]]:
        assert isinstance(labels, list)
        return [[k.lower() for k in f["match"]] for f in labels]

    texts = [said(f) for f in facts.values()]
    keys = keywords(labelled["facts"])
    also = keywords(labelled.get("also_true", []))
    found = sum(1 for words in keys if any(all(w in t for w in words) for t in texts))
    right = sum(1 for t in texts if any(all(w in t for w in words) for words in [*keys, *also]))
    label_entities = labelled["entities"]
    assert isinstance(label_entities, list)
    names = {e.name.lower() for e in entities.values()}
    known = [{e["name"].lower(), *(a.lower() for a in e.get("aliases", []))} for e in label_entities]
    entities_found = sum(1 for aliases in known if aliases & names)
    entities_right = sum(1 for name in names if any(name in aliases for aliases in known))
    stem = str(labelled["file"]).removesuffix(".jsonl")
    ids = {str(labelled.get("session_id") or stem), stem}
    drawn = [e for e, _, _ in episodes(events) if e.session_id in ids]
    episode = labelled["episode"]
    assert isinstance(episode, dict)

    def share(part: int, whole: int) -> float | None:
        return round(100 * part / whole, 1) if whole else None

    return {
        "file": labelled["file"],
        "facts": {
            "labelled": len(keys),
            "also_true": len(also),
            "extracted": len(texts),
            "found": found,
            "right": right,
        },
        "entities": {
            "labelled": len(known),
            "extracted": len(names),
            "found": entities_found,
            "right": entities_right,
        },
        "fact_precision": share(right, len(texts)),
        "fact_recall": share(found, len(keys)),
        "entity_precision": share(entities_right, len(names)),
        "entity_recall": share(entities_found, len(known)),
        "episode_outcome": [drawn[0].outcome if drawn else None, episode["outcome"]],
    }


def main() -> None:
    with open(LABELS) as f:
        labels = json.load(f)
    scored = [score(t) for t in labels["transcripts"]]

    def ratio(part: str, of: str, kind: str) -> float:
        total = sum(s[kind][of] for s in scored)  # type: ignore[index]
        return round(100 * sum(s[kind][part] for s in scored) / total, 1) if total else 0.0  # type: ignore[index]

    print(
        json.dumps(
            {
                "benchmark": "extraction_quality",
                "fact_precision": ratio("right", "extracted", "facts"),
                "fact_recall": ratio("found", "labelled", "facts"),
                "entity_precision": ratio("right", "extracted", "entities"),
                "entity_recall": ratio("found", "labelled", "entities"),
                "transcripts": scored,
            }
        )
    )


if __name__ == "__main__":
    main()
