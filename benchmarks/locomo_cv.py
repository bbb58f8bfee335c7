"""LoCoMo, leave one conversation out: do recall's constants hold beyond the conversations they
were chosen on?

The dev figure (benchmarks/locomo.py's, today's constants, through the real pipeline) is
optimistic: the constants were chosen looking at it. Here every constant in GRID is chosen again
for each conversation of the file, on the other conversations' questions only (the best mean of
R@5 and R@10; a tie goes to today's value), and measured on that conversation's questions. The
cross-validated figure pools those held-out measurements: what choosing constants on this data
is worth on conversations it never saw. The in-sample best (the grid's best point on all the
questions) shows how much choosing alone adds.

Cost: the retrievers, the model and DuckDB run once per question and BM25 setting
(Recaller.prepare); each fusion setting then re-fuses the prepared table in numpy
(pipeline.fused) and replays recall's weighing (`replay`; `replay_differs` counts the questions
whose replayed answer at today's constants is not the pipeline's own: 0). About 8 minutes for
the 110,592 points on 2 cores once the store is ingested, as benchmarks/locomo.py does it (a minute
more; kept with --home). Prints the folds on stderr, then one JSON line.

    python benchmarks/locomo_cv.py [PATH] [--home DIR]   (default ../shared/bench/locomo/locomo10_dev.json)
"""

import argparse
import itertools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks import locomo  # noqa: E402
from benchmarks.common import LOCOMO  # noqa: E402
from projections.embedding_model import Encoder, Matrix, load_encoder  # noqa: E402
from projections.recall.index import BM25, Bm25, Floats, Mask  # noqa: E402
from projections.recall.memories import Features, Memories  # noqa: E402
from projections.recall.pipeline import (  # noqa: E402
    DEFAULT_FUSION,
    Fusion,
    Recaller,
    Table,
    admitted,
    cognitive,
    fused,
    scaled,
    strength_of,
    weighed_at_once,
)
from projections.vectors import Vectors  # noqa: E402
from schemas.settings import Settings  # noqa: E402

KS = (5, 10)
LIMIT = max(locomo.KS)  # what benchmarks/locomo.py asks recall for
# The grid: today's values (listed first: a tie keeps them), a step either side (BM25: the other
# classic setting), and the knob off (0), which is the method with one knob fewer. Only relative
# weights matter, so the model's three readings stay at 1 and the others move against them.
GRID: dict[str, tuple[float, ...]] = {
    "k1": (0.9, 1.2),  # BM25 (0.9 and 0.4: Anserini's for short passages; 1.2 and 0.75: Lucene's)
    "b": (0.4, 0.75),
    "fulltext": (1.5, 0.0, 1.0, 2.0),  # BM25 of the memory
    "session": (1.5, 0.0, 1.0, 2.0),  # BM25 of its whole session
    "graph": (1.0, 0.0, 2.0),  # found along the entities the prompt names
    "dated": (6.0, 0.0, 4.0, 8.0),  # tells a time, for a prompt that asks for one
    "neighbour_share": (0.1, 0.0, 0.2),
    "answer_share": (0.3, 0.0, 0.2, 0.4),  # of a turn that asks, to the turn after it
    "timeframe": (10.0, 0.0, 3.0),  # 10: the memories of the time named come first
    "vague_timeframe": (1.0, 0.0, 0.5, 2.0),
}
_FIGURES = tuple(f"recall@{k}" for k in KS)
_RETRIEVAL = ("k1", "b")  # the knobs that change the candidates: a prepared table per setting


@dataclass(frozen=True)
class Question:
    """One question, prepared: its candidates' table and what recall's weighing reads of each."""

    conversation: str
    table: Table
    strength: Floats  # how strongly each candidate comes to mind (pipeline.strength_of)
    confidence: Floats
    admitted: Mask  # recall may answer with it (a fact believed now, any turn)
    dia: list[str | None]  # each candidate's LoCoMo turn
    evidence: frozenset[str]


class Remembering(Encoder):
    """The encoder, keeping every text's vector: a question is prepared once per BM25 setting,
    and its vector is the same each time."""

    def __init__(self, encoder: Encoder) -> None:
        super().__init__(encoder.model, encoder.name)
        self._known: dict[str, Matrix] = {}

    def encode(self, texts: list[str]) -> Matrix:
        key = "\x1f".join(texts)
        if key not in self._known:
            self._known[key] = super().encode(texts)
        return self._known[key]


def points(grid: dict[str, tuple[float, ...]]) -> list[dict[str, float]]:
    """Every combination of the grid's values, today's first."""
    names = list(grid)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*grid.values())]


def fusion_of(point: dict[str, float]) -> Fusion:
    fields = {name: value for name, value in point.items() if name not in _RETRIEVAL}
    return msgspec.structs.replace(DEFAULT_FUSION, **fields)


def prepare(
    recaller: Recaller,
    samples: list[dict[str, Any]],
    dia_of: dict[str, str],
    ends: dict[str, datetime],
    known: dict[tuple[str, str], dict[str, Features]],
) -> list[Question]:
    """Every question with evidence, prepared under the recaller's BM25 constants. `known`
    keeps each question's candidates' features across settings (they do not depend on BM25)."""
    questions = []
    for sample in samples:
        project, now = sample["sample_id"], ends[sample["sample_id"]]
        for qa in sample["qa"]:
            if not (evidence := locomo.evidence_of(qa)):
                continue
            prepared = recaller.prepare(qa["question"], project=project, now=now)
            named = prepared.candidates.named
            features = known.setdefault((project, qa["question"]), {})
            missing = [m for m in prepared.table.ids if m not in features]
            features |= recaller.memories.features(missing, named) if missing else {}
            questions.append(_question(project, prepared.table, features, named, now, dia_of, evidence))
    return questions


def _question(
    project: str,
    table: Table,
    features: dict[str, Features],
    named: list[str],
    now: datetime,
    dia_of: dict[str, str],
    evidence: set[str],
) -> Question:
    strength, confidence, allowed = [], [], []
    for m in table.ids:
        f = features.get(m)
        strength.append(strength_of(f, len(named), now)[3] if f else 0.0)
        confidence.append(f.confidence if f else 0.0)
        allowed.append(f is not None and admitted(f, None, now, None, None))
    return Question(
        project,
        table,
        np.asarray(strength),
        np.asarray(confidence),
        np.asarray(allowed, np.bool_),
        [dia_of.get(m) for m in table.ids],
        frozenset(evidence),
    )


def replay(question: Question, fusion: Fusion, limit: int = LIMIT) -> list[float]:
    """Recall@k (k in KS) of recall's answer under `fusion`, as Recaller.recall makes it: the
    fused relevance scaled from 0 to 1; candidates weighed by strength and confidence a shortlist
    at a time, the most relevant first, until `limit` are admitted; the best `limit` by score.
    LoCoMo has no global memory, so no relevance is weighed by kinship."""
    relevance = scaled(fused(question.table, fusion))
    order = np.argsort(-relevance, kind="stable")
    allowed = question.admitted[order]
    step = weighed_at_once(limit)
    ends = np.minimum(np.arange(step, len(order) + step, step), len(order))
    enough = np.cumsum(allowed)[ends - 1] >= limit if len(order) else np.zeros(0, np.bool_)
    last = int(ends[np.argmax(enough)]) if enough.any() else len(order)
    taken = order[:last][allowed[:last]]
    scores = np.round(cognitive(relevance[taken], question.strength[taken], question.confidence[taken]), 6)
    best = taken[np.argsort(-scores, kind="stable")][:limit]
    ranked = [question.dia[i] for i in best]
    return [len(question.evidence & set(ranked[:k])) / len(question.evidence) for k in KS]


def _effective(fusion: Fusion, table: Table) -> Fusion:
    """`fusion` with the constants that cannot change this table's answer set to 0: a question
    naming no time is answered alike whatever the timeframes (so each answer is computed once)."""
    if not table.in_window.any():
        fusion = msgspec.structs.replace(fusion, timeframe=0.0, vague_timeframe=0.0)
    elif table.vague:
        fusion = msgspec.structs.replace(fusion, timeframe=0.0)
    else:
        fusion = msgspec.structs.replace(fusion, vague_timeframe=0.0)
    if not table.found["graph"].any():
        fusion = msgspec.structs.replace(fusion, graph=0.0)
    if not table.found["dated"].any():
        fusion = msgspec.structs.replace(fusion, dated=0.0)
    return fusion


def measured(questions: list[Question], fusions: list[Fusion]) -> npt.NDArray[np.float64]:
    """recall@k of every question under every fusion: [fusion, question, k]."""
    found = np.zeros((len(fusions), len(questions), len(KS)))
    for q, question in enumerate(questions):
        answers: dict[Fusion, list[float]] = {}
        for f, fusion in enumerate(fusions):
            key = _effective(fusion, question.table)
            if key not in answers:
                answers[key] = replay(question, fusion)
            found[f, q] = answers[key]
    return found


def chosen(found: npt.NDArray[np.float64], among: Mask) -> int:
    """The grid point with the best mean of R@5 and R@10 over the questions `among`; the first
    (today's values come first) of equals."""
    objective = found[:, among, :].mean(axis=(1, 2))
    return int(np.argmax(objective >= objective.max() - 1e-12))


def cross_validated(
    found: npt.NDArray[np.float64], conversations: list[str], grid: list[dict[str, float]]
) -> tuple[npt.NDArray[np.float64], list[dict[str, Any]]]:
    """Each question's recall@k under the constants chosen without its conversation, and the
    folds: the conversation held out, its figure under what was chosen for it (and under today's
    constants, the grid's first point) and what was chosen."""
    of = np.asarray(conversations)
    held_out = np.zeros(found.shape[1:])
    folds = []
    for conversation in dict.fromkeys(conversations):
        test = of == conversation
        point = chosen(found, ~test)
        held_out[test] = found[point, test]
        fold = {"held_out": conversation, "questions": int(test.sum())} | _figure(found[point, test])
        folds.append(fold | {"today": _figure(found[0, test]), "constants": grid[point]})
    return held_out, folds


def one_knob(
    found: npt.NDArray[np.float64], conversations: list[str], grid: list[dict[str, float]], knob: str
) -> dict[str, Any]:
    """Cross-validation of choosing `knob` alone, the others at today's values: its figure, the
    value each fold chose, the value all the questions would choose, and the figure on all the
    questions at each of its values (how much the knob matters)."""
    today = grid[0]
    at = [i for i, p in enumerate(grid) if all(p[n] == today[n] for n in p if n != knob)]
    held_out, folds = cross_validated(found[at], conversations, [grid[i] for i in at])
    everyone = grid[at[chosen(found[at], np.ones(found.shape[1], np.bool_))]][knob]
    return _figure(held_out) | {
        "chosen": [f["constants"][knob] for f in folds],
        "in_sample": everyone,
        "dev_at": {str(grid[i][knob]): list(_figure(found[i]).values()) for i in at},
    }


def _figure(rows: npt.NDArray[np.float64]) -> dict[str, float]:
    return {f"recall@{k}": round(100 * float(rows[:, i].mean()), 1) for i, k in enumerate(KS)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", nargs="?", default=LOCOMO, help="a LoCoMo-format JSON file")
    parser.add_argument("--home", help="keep the ingested data here (as benchmarks/locomo.py --home)")
    args = parser.parse_args()
    with open(args.path) as f:
        samples = json.load(f)
    home = args.home or tempfile.mkdtemp(prefix="rv-locomo-cv-")
    try:
        result = run(Settings(home), samples)
    finally:
        if not args.home:
            shutil.rmtree(home, ignore_errors=True)
    print(json.dumps({"benchmark": "locomo_cv", **result}))


def run(settings: Settings, samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Ingest (unless kept), measure today's constants through the pipeline, then every grid
    point by replay, and cross-validate the choice."""
    started = time.perf_counter()
    dia_of: dict[str, str] = {}
    ends: dict[str, datetime] = {}
    events = []
    for sample in samples:
        conversation, dias, ends[sample["sample_id"]] = locomo.turn_events(sample)
        events.append(conversation)
        dia_of |= dias
    if not set(dia_of) <= locomo.embedded_turns(settings):
        locomo.ingest(settings, events, set(dia_of))
    encoder = Remembering(load_encoder(settings.embedding_model))
    recaller = Recaller(encoder, Vectors(settings.vectors_dir, encoder.dim), Memories(settings))
    assert not recaller.memories.kinship().origins, "replay assumes no global memory from elsewhere"
    dev, _ = locomo.evaluate(recaller, samples, dia_of, ends)
    grid = points(GRID)
    assert fusion_of(grid[0]) == DEFAULT_FUSION and Bm25(grid[0]["k1"], grid[0]["b"]) == BM25, "today's first"
    found = np.zeros((len(grid), len(dev), len(KS)))
    known: dict[tuple[str, str], dict[str, Features]] = {}
    for setting in dict.fromkeys((p["k1"], p["b"]) for p in grid):
        recaller.bm25 = Bm25(*setting)
        questions = prepare(recaller, samples, dia_of, ends, known)
        at = [i for i, p in enumerate(grid) if (p["k1"], p["b"]) == setting]
        found[at] = measured(questions, [fusion_of(grid[i]) for i in at])
        print(f"k1 {setting[0]}, b {setting[1]}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    recaller.bm25 = BM25
    today = np.asarray([[row[k] for k in KS] for _, row in dev])
    conversations = [q.conversation for q in questions]
    held_out, folds = cross_validated(found, conversations, grid)
    for fold in folds:
        print(json.dumps(fold), file=sys.stderr)
    best = chosen(found, np.ones(len(dev), np.bool_))
    return {
        "questions": len(dev),
        "dev": _figure(today),
        "replay_differs": int((np.abs(found[0] - today) > 1e-9).any(axis=1).sum()),
        "in_sample_best": _figure(found[best]) | {"constants": grid[best]},
        "cv": _figure(held_out),
        "cv_fold_mean": {name: round(statistics.mean(f[name] for f in folds), 1) for name in _FIGURES},
        # how far one conversation's figure strays from another's, at today's constants: the
        # yardstick for a gap between two sets of a few conversations
        "conversation_sd": {
            name: round(statistics.stdev(f["today"][name] for f in folds), 1) for name in _FIGURES
        },
        "folds": [{name: value for name, value in f.items() if name != "constants"} for f in folds],
        "one_knob": {knob: one_knob(found, conversations, grid, knob) for knob in GRID},
        "grid_points": len(grid),
        "questions_reached_by": {  # the knobs that can move a question's answer
            "timeframe": sum(bool(q.table.in_window.any()) and not q.table.vague for q in questions),
            "vague_timeframe": sum(bool(q.table.in_window.any()) and q.table.vague for q in questions),
            "graph": sum(bool(q.table.found["graph"].any()) for q in questions),
            "dated": sum(bool(q.table.found["dated"].any()) for q in questions),
        },
        "seconds": round(time.perf_counter() - started),
    }


if __name__ == "__main__":
    main()
