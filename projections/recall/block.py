"""What the UserPromptSubmit hook injects: of recall's best memories, the few that answer the
prompt, each said once, the distilled before the raw chat, a long one as the passage that
matters; nothing when nothing in memory answers the prompt.

1. **A floor.** Recall ranks by z-scores, which are relative: the best of any scope looks good
   beside the rest, whatever the prompt. Whether memory answers at all is read from the model's
   cosine as it is: the prompt's nearest memory must reach `BLOCK_FLOOR`, or a memory must hold
   verbatim a name from code the prompt gives (`cache_key.py`, `SPOTTER_OTEL_ENABLED`). An item
   must reach `ITEM_FLOOR` (or hold such a name). MiniLM puts unrelated English texts at 0.0 to
   0.25 and related ones above 0.3; on two stores of real coding sessions, 20 prompts about
   something else ("explain how python decorators work") met no memory above 0.25, and the
   questions the sessions answer had one at 0.30 or more. A turn of chat (a prompt, a message)
   must also share a word with the prompt: the model puts "write a haiku about autumn leaves"
   at 0.38 of "what causes the seasons on Earth?".
2. **A question is no answer.** The asking prompt's earlier copies (its words alike by `ECHO`),
   and any earlier prompt whose first sentence asks rather than tells (a question, "explain
   ...", "summarize ..."), or whose last asks to know (not "can you ...?", which asks for
   work), and that states no rule, are left out: what answered it (the agent's message, a
   fact) is a memory of its own.
3. **Distilled first.** A fact, a preference or an episode outranks the raw chat it came from:
   prompts and messages weigh `RAW_WEIGHT` of their score here, and a turn a standing fact was
   drawn from is that fact (said once, as the fact).
4. **Once.** A line whose words are `SAID` covered by what the block holds already, or by one
   line of what the agent holds already (the files Claude Code loaded as its memory, CLAUDE.md
   with reverie's own section; what SessionStart gave the session), is left out; an item left
   without lines goes, and so does one whose lines together the block holds `SAID` already (the
   same sentence again, its one new word a number).
5. **The passage that matters.** A memory longer than `LONG` (a compaction summary, a report,
   a file a tool showed) is shown as its window that answers: the lines holding most of the
   prompt's rarer words (plus how near the model puts the chunk each is in: the vectors the
   embedder keeps of each chunk), a heading line with the line it introduces, then their
   neighbours, up to `EXCERPT` characters, in their order; and it must pass the floors by that
   window, as a short memory does by its text. Verbatim: lines are cut, never reworded. A
   passage keeps its heading (where it came from), said once.
6. **A handful.** At most `MAX_ITEMS` items (Baddeley's chunks of working memory).

Opinions are reverie's own answers to a question someone asked (`reverie reflect`): they are
shown only for a prompt near that question (`OPINION_FLOOR`), after everything else, and
labelled as reflection (projections/recall/render.py).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from itertools import pairwise
from typing import TYPE_CHECKING

import msgspec

from projections.recall.tasks import identifiers
from projections.recall.words import NEGATIONS, STOP_WORDS, covered, jaccard, word_set
from schemas.recall import Scored

if TYPE_CHECKING:  # the vectors' module loads Arrow: reflection's asker reads blocks without it
    from projections.vectors import Vector

BLOCK_FLOOR = 0.3
ITEM_FLOOR = 0.25
SHARED = 0.1  # of the prompt's words (each weighing its rarity) an item holds, unless NEAR
RAW_SHARED = 0.15  # ... a turn of chat or a passage holds, whatever the model says
NEAR = 0.5
OPINION_FLOOR = 0.5
ECHO = 0.9
RAW_WEIGHT = 0.8
SAID = 0.8
LONG = 420
EXCERPT = 360
_HEADING_WORDS = 4  # a line of so few words heads what follows it ("Software Design")
MAX_ITEMS = 6
RAW = ("prompt", "message", "task", "said", "passage")  # what was said and shown, not distilled
REQUESTS = ("prompt", "task")  # what the user (or the agent, of a subagent) asked for
# what the user chose to keep: its meaning alone may answer ("which database?" and "we chose
# PostgreSQL over MySQL" share no word)
CHOSEN = ("remembered", "preference")
REFLECTION = ("opinion", "observation")
# What a memory's text is cut into, each part said once: a short memory's sentences; a long one's
# lines (a summary's bullets), a line past _LINE_MAX characters at its sentences.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LINE_MAX = 300
# What asks rather than tells, in English or French, read in its first sentence: a question (it
# ends with a question mark, or opens with an interrogative that asks, "how do...", "what is...")
# or a request to be told ("explain ...", "summarize ...", "dis-moi ..."). An instruction that
# opens alike ("When running tests, always ...", "Do not use pip", "Comment out ...") does not
# ask; nor does a sentence that states a rule ("always", "never", "toujours", "jamais").
_FIRST_SENTENCE = re.compile(r"[^.!?\n]*[.!?]?")
# what a sentence that asks begins with (a question word, or a request to explain)
_ASKING = (
    r"^\s*(?:what|which|why|who|whose|how(?:\s+(?:do|does|did|can|could|should|would|is|are|was"
    r"|were|to|much|many|long|often))|explain|describe|tell me|show me|summari[sz]e|translate|pourquoi"
    r"|qu'est-ce|est-ce que|quel(?:le)?s?\b|explique[rz]?|décris|résume|traduis|montre-moi|dis-moi)\b"
)
_ASKS = re.compile(rf"\?\s*$|{_ASKING}", re.IGNORECASE)  # a first sentence: a question mark will do
# a last sentence, after what the prompt tells, asks to know, not for work ("Can you add an index?")
_ASKS_LAST = re.compile(
    rf"{_ASKING}|^(?!\s*(?:(?:can|could|would|will)\s+you|please)\b).*\?\s*$", re.IGNORECASE
)
# code in a request: a command's flag (`--remote-only`, `-x`), or words between backticks
_CODE = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*|`[^`\n]+`")
# a request that opens by saying how rather than what: "use the v2 route", "prefer ...", "don't ..."
_DIRECTS = re.compile(r"\s*(?:please\s+)?(?:use|prefer|avoid|don't|do not)\b", re.IGNORECASE)
_STATES_A_RULE = re.compile(r"\b(?:always|never|from now on|toujours|jamais|désormais)\b", re.IGNORECASE)
# a sentence that states what is so: it opens with who or what it is about ("I moved to Berlin",
# "the API listens on 8080", "our CI runs Node 20"), not with a verb (a request), nor with a
# framing that asks for work or only guesses ("I want you to ...", "we need ...", "I think ...");
# a prompt whose last clause asks for work ("the app crashes on rotation, fix it") reports what
# is wrong for the agent to work on: what the agent found is memory of its own
_STATES = re.compile(
    r"(?:^|[,;:.!?\n])\s*(?:i|i'm|i've|we|we're|we've|my|our|the|this|these|those|it|it's|there|he|she"
    r"|they|his|her|their|je|j'ai|nous|notre|nos|mon|ma|mes|il|elle|on)\s+(?!(?:want|wanted|need|needed"
    r"|would|should|must|have to|had to|wonder|think|guess|hope|will|can|could|veux|voudrais|dois"
    r"|pense|crois)\b)\w",
    re.IGNORECASE,
)
_CLAUSE_WORDS = re.compile(r"[^\W\d_][\w'-]*")
_CLAUSES = re.compile(r"[,;:](?=\s)|[.!?]+(?=\s|$)|\n")  # not the dot of "stream.go"

# the passages of long memories: memory id -> each chunk's text and vector
Passages = Callable[[list[str]], "dict[str, list[tuple[str, Vector]]]"]
# how rare a word of the prompt is among the memories that may answer (BM25's idf)
Rarity = Callable[[str], float]


class Shown(msgspec.Struct, frozen=True):
    """A memory as the block shows it: what it is, and its text or the passage that matters."""

    memory_id: str
    kind: str
    text: str
    ts: datetime | None
    category: str | None = None
    memory_type: str | None = None
    passed: str = ""  # why it passed the floor (`passed`)
    similarity: float = 0.0  # the model's cosine of the prompt and it (of its nearest passage)


def select(
    prompt: str,
    found: Sequence[Scored],
    query: Vector,
    passages: Passages,
    rarity: Rarity,
    known: Sequence[str] = (),
) -> list[Shown]:
    """The items to inject for `prompt` from recall's `found` (best first); [] for none. `known`:
    texts the agent holds already (its CLAUDE.md, what its session began with): a line one of
    their lines says is not given again."""
    return select_explained(prompt, found, query, passages, rarity, known)[0]


def select_explained(
    prompt: str,
    found: Sequence[Scored],
    query: Vector,
    passages: Passages,
    rarity: Rarity,
    known: Sequence[str] = (),
) -> tuple[list[Shown], dict[str, str]]:
    """`select`, and why each of `found` it leaves out is left out, in words, by memory id."""
    asked = word_set(prompt)
    names = _names(prompt)
    long = [m.memory_id for m in found if len(m.text) > LONG]
    chunks = passages(long) if long else {}
    left: dict[str, str] = {}
    weights = {w: rarity(w) for w in asked - NEGATIONS}  # a "not" in common tells nothing of the subject
    nearest = [_nearest(m, chunks.get(m.memory_id, []), query) for m in found]
    ranked = _ranked(nearest, names, asked, weights, left)
    held = [words for text in known for line in _split(text, _LINE_MAX) if (words := word_set(line))]
    said: frozenset[str] = frozenset()
    shown: list[Shown] = []
    opened = False
    for memory in ranked:
        if len(shown) == MAX_ITEMS:
            left[memory.memory_id] = f"the block holds {MAX_ITEMS} at most"
            continue
        heading = _heading(memory)
        lines = _lines_of(memory, chunks.get(memory.memory_id, []), query, asked, rarity)
        lines = [(i, line) for i, line in lines if not _in_heading(line, heading)] or [(0, heading)]
        if too_few := _window_short(memory, heading, lines, names, asked, weights):
            left[memory.memory_id] = too_few
            continue
        fresh = [(i, line) for i, line in lines if covered(word_set(line), said) < SAID]
        if not fresh or covered(word_set(" ".join(line for _, line in lines)), said) >= SAID:
            left[memory.memory_id] = "what it says, one given before it said"
            continue
        fresh = [(i, line) for i, line in fresh if not _held(word_set(line), held)]
        if not fresh:
            left[memory.memory_id] = (
                "what it says, the agent holds already (its CLAUDE.md, its session's start)"
            )
            continue
        said |= word_set(" ".join(line for _, line in fresh))
        text = _joined(fresh) if fresh[0][1] == heading else f"{heading} {_joined(fresh)}".lstrip()
        why = passed(memory, names, asked, weights) or ""
        near = memory.similarity
        shown.append(
            Shown(
                memory.memory_id, memory.kind, text, memory.ts, memory.category, memory.memory_type, why, near
            )
        )
        opened |= memory.similarity >= BLOCK_FLOOR or _holds(memory, names)
    if not opened:  # what reached the block's floor was left out (by its window): nothing answers
        left.update((m.memory_id, f"nothing it shows reaches the block's floor {BLOCK_FLOOR}") for m in shown)
        return [], left
    return shown, left


def _window_short(
    memory: Scored,
    heading: str,
    lines: list[tuple[int, str]],
    names: list[re.Pattern[str]],
    asked: frozenset[str],
    weights: dict[str, float],
) -> str | None:
    """Why a long memory fails the floors by the window it would show, in words (a long summary
    holds some word of any prompt somewhere); None when it passes, or is short, or is a request
    (judged whole: its rule may lie outside the window)."""
    if len(memory.text) <= LONG or memory.kind in REQUESTS:
        return None
    window = msgspec.structs.replace(memory, text=f"{heading} {_joined(lines)}")
    if passed(window, names, asked, weights):
        return None
    return f"the window it would show: {_not_near(window, _shared(window, weights))}"


def _ranked(
    found: Sequence[Scored],
    names: list[re.Pattern[str]],
    asked: frozenset[str],
    weights: dict[str, float],
    left: dict[str, str],
) -> list[Scored]:
    """The memories that may answer, the distilled first; none if memory does not answer at
    all (see the module's docstring, 1 to 3). Why each other is left out goes into `left`."""
    answers = []
    for m in found:
        if asked_before(m.kind, m.text, asked):
            left[m.memory_id] = (
                "a question asked before (the prompt's earlier copy, or a question), no answer"
            )
        else:
            answers.append(m)
    near = []
    for m in answers:
        if passed(m, names, asked, weights):
            near.append(m)
        else:
            left[m.memory_id] = _not_near(m, _shared(m, weights))
    if not any(m.similarity >= BLOCK_FLOOR or _holds(m, names) for m in near):
        best = max((m.similarity for m in near), default=0.0)
        left.update(
            (m.memory_id, f"nothing answers: the nearest is at {best:.2f}, the block's floor {BLOCK_FLOOR}")
            for m in near
        )
        return []
    # a fact drawn from one turn stands for it (an LLM's fact names its batch's ends, not a turn)
    drawn = {m.derived_from[0] for m in near if m.kind == "fact" and len(m.derived_from) == 1}
    stood_for = {m.memory_id for m in near if m.kind in RAW and m.memory_id in drawn}
    left.update((m, "a fact drawn from it stands for it") for m in stood_for)
    return sorted((m for m in near if m.memory_id not in stood_for), key=_rank)


def _not_near(memory: Scored, shared: float) -> str:
    """Why `memory` is not near enough the prompt (`passed` says None), in words."""
    if memory.kind in REFLECTION:
        return (
            f"an opinion the model puts at {memory.similarity:.2f}, below an opinion's floor {OPINION_FLOOR}"
        )
    if memory.kind in REQUESTS and not _tells(memory.text):
        return "a request that states no rule and gives no code: it tells nothing to give again"
    if memory.similarity < ITEM_FLOOR:
        return f"the model puts it at {memory.similarity:.2f}, below the floor {ITEM_FLOOR}"
    return (
        f"it holds {shared:.0%} of the prompt's words (by rarity), too few for a"
        f" {'turn of chat or a passage' if memory.kind in RAW else 'memory'} the model puts at"
        f" {memory.similarity:.2f}"
    )


def _rank(memory: Scored) -> float:
    """The block's order: the distilled first, then the raw chat, reverie's own reflection last
    (an opinion quotes its evidence: after the evidence, it says only what it concluded)."""
    if memory.kind in REFLECTION:
        return 1 - memory.score
    return -memory.score * (RAW_WEIGHT if memory.kind in RAW else 1.0)


def _nearest(memory: Scored, chunks: list[tuple[str, Vector]], query: Vector) -> Scored:
    """A long memory as near as its nearest passage (its row's vector is all its chunks'
    mean, which one answering passage among many barely moves)."""
    if not chunks:
        return memory
    nearest = max(float(vector @ query) for _, vector in chunks)
    return msgspec.structs.replace(memory, similarity=max(memory.similarity, round(nearest, 6)))


def passed(
    memory: Scored, names: list[re.Pattern[str]], asked: frozenset[str], weights: dict[str, float]
) -> str | None:
    """Why `memory` is near enough the prompt to be shown, in words; None when it is not."""
    near = f"the model puts it at {memory.similarity:.2f} of the prompt"
    if memory.kind in REFLECTION:  # an answer to a question: for a prompt near it only
        return (
            f"{near}, an opinion's floor being {OPINION_FLOOR}"
            if memory.similarity >= OPINION_FLOOR
            else None
        )
    if memory.kind in REQUESTS and not _tells(memory.text):  # whatever names it shares
        return None
    held = [name.pattern for name in names if name.search(memory.text)]
    if held:
        return f"it holds a name from the prompt ({_name_of(held[0])})"
    if memory.similarity < ITEM_FLOOR:
        return None
    shared = _shared(memory, weights)
    if shared < (RAW_SHARED if memory.kind in RAW else 0.0) or (
        shared < SHARED and memory.similarity < NEAR and memory.kind not in CHOSEN
    ):
        return None  # near to the model only: it puts unrelated texts of one field above the floor
    return f"{near}, the floor being {ITEM_FLOOR}, and it holds {shared:.0%} of the prompt's words"


def _tells(request: str) -> bool:
    """Whether a request says more than what it asked for: it states a rule ("always ...", "never
    ..."), opens by saying how ("use the /api/hooks/session-end route"), gives code verbatim
    (`fly deploy --remote-only`, a flag), which a later question may need as it was typed, or
    states what is so ("we moved the API to port 8080", "I went to the support group on May 7").
    "Write a haiku", "add a search bar to the products page" or "fix the leak in
    server/stream.go" tell nothing memory should give again: what the agent did about it (the
    file it opened, what it said) is memory of its own."""
    return (
        _STATES_A_RULE.search(request) is not None
        or _DIRECTS.match(request) is not None
        or _CODE.search(request) is not None
        or (_STATES.search(request) is not None and not _ends_asking_for_work(request))
    )


def _ends_asking_for_work(request: str) -> bool:
    """Whether the last clause of `request` opens with a word that is no function word (a verb:
    "..., fix it", "... Optimize the query.") and goes on."""
    clauses = [words for c in _CLAUSES.split(request) if (words := _CLAUSE_WORDS.findall(c))]
    words = clauses[-1] if clauses else []
    return len(words) >= 2 and words[0].lower().partition("'")[0] not in STOP_WORDS


def _shared(memory: Scored, weights: dict[str, float]) -> float:
    """The share of the prompt's words `memory` holds, each weighing its rarity."""
    whole = sum(weights.values())
    held = word_set(memory.text) & weights.keys()
    return sum(weights[w] for w in held) / whole if whole else 0.0


def _name_of(pattern: str) -> str:
    """The name a pattern of `_names` finds, as the prompt gave it."""
    return re.sub(r"\\(.)", r"\1", pattern.removeprefix(r"(?<!\w)").removesuffix(r"(?!\w)"))


def _names(prompt: str) -> list[re.Pattern[str]]:
    """The names from code the prompt gives, as patterns that find them whole (`e.g.`, `I/O`,
    `CI/CD`, `and/or` are prose, not code)."""
    found = []
    for name in identifiers(prompt):
        parts = [p for p in re.split(r"[._/-]+", name) if p]
        if sum(map(len, parts)) >= 5 and max(map(len, parts), default=0) >= 3 and name.lower() not in _PROSE:
            found.append(re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.IGNORECASE))
    return found


_PROSE = frozenset(["and/or", "either/or", "etc.", "vs."])


def _holds(memory: Scored, names: list[re.Pattern[str]]) -> bool:
    return any(name.search(memory.text) for name in names)


def asked_before(kind: str, text: str, asked: frozenset[str]) -> bool:
    """Whether a memory is a question asked before, no answer: the asking prompt's earlier copy
    (its words, `asked`, alike by ECHO), or any prompt that is itself a question (its answer, the
    agent's message, is a memory of its own): one whose first sentence asks, or whose last asks
    to know rather than for work (people say what they are on first, and ask after), and that
    states no rule anywhere."""
    if kind != "prompt":
        return False
    return jaccard(word_set(text), asked) >= ECHO or asks(text)


def asks(text: str) -> bool:
    """Whether a prompt asks rather than tells: its first sentence asks, or its last asks to know
    rather than for work, and it states no rule anywhere."""
    first = _FIRST_SENTENCE.match(text.strip())
    asking = _ASKS.search(first.group() if first else "") or _ASKS_LAST.search(_last_sentence(text))
    return asking is not None and _STATES_A_RULE.search(text) is None


def _last_sentence(text: str) -> str:
    """The last sentence of `text`, its own end marks kept (linear: no pattern anchored at the end)."""
    text = text.rstrip()
    body = len(text.rstrip(".!?"))
    return text[max(text.rfind(mark, 0, body) for mark in ".!?\n") + 1 :]


def _lines_of(
    memory: Scored,
    chunks: list[tuple[str, Vector]],
    query: Vector,
    asked: frozenset[str],
    rarity: Rarity,
) -> list[tuple[int, str]]:
    """The memory's text as numbered lines (in order); a long one's passage nearest the prompt."""
    if len(memory.text) <= LONG:
        return list(enumerate(_split(memory.text, 0)))
    parts = chunks or [(memory.text, query * memory.similarity)]
    lines = [(line, float(vector @ query)) for text, vector in parts for line in _split(text, _LINE_MAX)]
    return _excerpt(lines, asked, rarity)


def _held(words: frozenset[str], held: list[frozenset[str]]) -> bool:
    """Whether one line the agent holds says `words` (a line's) already."""
    return bool(words) and any(covered(words, line) >= SAID for line in held)


def _heading(memory: Scored) -> str:
    """What a passage's first line says: where it comes from ("Read assets/package.json:"), which
    goes with whatever part of it is shown."""
    if memory.kind != "passage":
        return ""
    return " ".join(memory.text.partition("\n")[0].split())


def _in_heading(line: str, heading: str) -> bool:
    """Whether `line` is its passage's heading or a piece of it (where a chunk began mid-line,
    or a sentence of it): the heading goes with every window."""
    return bool(heading) and (heading.startswith(line) or heading.endswith(line))


def _joined(lines: list[tuple[int, str]]) -> str:
    """Numbered lines as one text: a gap where lines were left out says so."""
    text = lines[0][1]
    for (before, _), (at, line) in pairwise(lines):
        text += (" " if at == before + 1 else " … ") + line
    return text


def _split(text: str, line_max: int) -> list[str]:
    """`text`'s lines, spaces collapsed, a line past `line_max` characters cut at its sentences."""
    lines = (" ".join(raw.split()) for raw in text.splitlines())
    return [
        part
        for line in lines
        if line
        for part in (_SENTENCE_END.split(line) if len(line) > line_max else [line])
    ]


def _excerpt(lines: list[tuple[str, float]], asked: frozenset[str], rarity: Rarity) -> list[tuple[int, str]]:
    """The lines nearest the prompt, in their order, within EXCERPT characters: those holding its
    words (each word weighing its rarity, a line read in its context: plus how near the model puts
    the chunk it is in), a heading among them with the line it introduces, then the lines either
    side of them (over lines with no words), the window that answers; when no line holds a word
    of the prompt, the lines of the chunk the model puts nearest, from its start."""
    weights = {w: rarity(w) for w in asked}
    whole = sum(weights.values()) or 1.0
    words_of = [word_set(line) for line, _ in lines]
    held = [sum(weights[w] for w in words & asked) / whole for words in words_of]
    nearness = [share + near for share, (_, near) in zip(held, lines, strict=True)]
    order = sorted(range(len(lines)), key=lambda i: (-nearness[i], i))
    if any(held):
        worded = [i for i, words in enumerate(words_of) if words]
        hits = [j for i in order if held[i] for j in (i, *_introduced(lines, worded, i))]
        order = hits + [j for i in hits for j in _neighbours(worded, i)]
    kept: list[int] = []
    used = 0
    for i in dict.fromkeys(order):
        line = _cut(lines[i][0])
        if used + len(line) > EXCERPT and kept:
            break
        kept.append(i)
        used += len(line)
    return [(i, _cut(lines[i][0])) for i in sorted(kept)]


def _neighbours(worded: list[int], at: int) -> list[int]:
    """The lines either side of line `at` that hold words, the one after first, over lines that
    hold none (a line of dashes, a box's edge)."""
    after = bisect.bisect_right(worded, at)
    return [worded[j] for j in (after, bisect.bisect_left(worded, at) - 1) if 0 <= j < len(worded)]


def _introduced(lines: list[tuple[str, float]], worded: list[int], at: int) -> list[int]:
    """The line a heading introduces (a line ending with a colon, or of a few words: "Software
    Design", then what was found under it), which goes with it; none for a line of its own."""
    line = lines[at][0]
    if not (line.endswith(":") or len(line.split()) <= _HEADING_WORDS):
        return []
    after = bisect.bisect_right(worded, at)
    return worded[after : after + 1]


def _cut(line: str) -> str:
    return line if len(line) <= EXCERPT else line[: EXCERPT - 1] + "…"
