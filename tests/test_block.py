"""What the UserPromptSubmit hook injects (projections/recall/block.py, render.py): nothing when
memory does not answer, each memory once, the distilled before the raw chat, a long memory as
its passage that matters, verbatim, in sections whose headings say what they hold."""

from datetime import UTC, datetime

import numpy as np
import pytest

from projections.recall import block, render
from projections.recall.block import Shown, select
from projections.vectors import Vector
from schemas.recall import Scored

QUERY: Vector = np.eye(4, dtype=np.float32)[0]
ELSEWHERE: Vector = np.eye(4, dtype=np.float32)[1]
DAY = datetime(2026, 2, 12, 9, 30, tzinfo=UTC)


def memory(
    memory_id: str,
    text: str,
    *,
    kind: str = "fact",
    score: float = 0.5,
    similarity: float = 0.5,
    category: str | None = None,
    derived_from: list[str] | None = None,
) -> Scored:
    return Scored(
        memory_id, kind, text, DAY, "/p", None, None, score, score, 0.0, 1.0, 1.0, 1.0, [], {},
        similarity=similarity, category=category, derived_from=derived_from or [],
    )  # fmt: skip


def no_passages(memory_ids: list[str]) -> dict[str, list[tuple[str, Vector]]]:
    return {}


def rarity(word: str) -> float:
    return 1.0


def chosen(prompt: str, found: list[Scored], passages: block.Passages = no_passages) -> list[Shown]:
    return select(prompt, found, QUERY, passages, rarity)


def test_a_prompt_memory_does_not_answer_gets_nothing() -> None:
    found = [memory(f"m{i}", f"the project depends on ash {i}.0", similarity=0.25) for i in range(5)]
    assert chosen("explain how python decorators work", found) == []


def test_earlier_chat_near_only_to_the_model_is_no_answer() -> None:
    """The model puts "write a haiku about autumn leaves" at 0.38 of the seasons' question, above
    the answers some real questions have: a turn of chat must share a word with the prompt."""
    haiku = memory("h", "write a haiku about autumn leaves", kind="prompt", similarity=0.38)
    fact = memory("f", "autumn comes as the Earth's tilt turns a hemisphere away", similarity=0.38)
    assert chosen("what causes the seasons on Earth?", [haiku]) == []
    assert [m.memory_id for m in chosen("what causes the seasons on Earth?", [haiku, fact])] == ["f"]
    said = memory(
        "s", "the seasons come from the Earth's tilt, not its distance", kind="message", similarity=0.38
    )
    assert [m.memory_id for m in chosen("what causes the seasons on Earth?", [haiku, said])] == ["s"]


def test_a_name_from_code_the_prompt_gives_is_an_answer_however_far_the_model_puts_it() -> None:
    found = [
        memory("m1", "SPOTTER_OTEL_ENABLED=false turns tracing off", similarity=0.1),
        memory("m2", "the project depends on ash 3.0", similarity=0.1),
    ]
    assert [m.memory_id for m in chosen("what does SPOTTER_OTEL_ENABLED do?", found)] == ["m1"]


def test_the_asking_prompts_earlier_copies_are_no_answer() -> None:
    found = [
        memory("q", "How long do the tail workers wait before they ingest?", kind="prompt", score=0.9),
        memory("a", "tail workers debounce ingest by 500 ms", score=0.6, similarity=0.45),
    ]
    assert [m.memory_id for m in chosen("how long do the tail workers wait before they ingest", found)] == [
        "a"
    ]


def test_a_fact_stands_for_the_prompt_it_was_drawn_from_and_is_said_once() -> None:
    found = [
        memory("p", "We chose PostgreSQL over MySQL because of JSONB", kind="prompt", score=0.9),
        memory("f", "We chose PostgreSQL over MySQL because of JSONB", score=0.8, derived_from=["p"]),
        memory("e", "Chose PostgreSQL over MySQL because of JSONB. Files changed: db.py", kind="episode"),
    ]
    shown = chosen("which database did we choose", found)
    assert [(m.memory_id, m.text) for m in shown] == [
        ("f", "We chose PostgreSQL over MySQL because of JSONB"),
        ("e", "Files changed: db.py"),  # what the fact said is not said again
    ]


def test_distilled_memory_outranks_the_raw_chat() -> None:
    found = [
        memory("m", "I think we should cache the embeddings on disk", kind="message", score=0.8),
        memory("f", "the embedding cache is a DuckDB file of its own", score=0.7),
    ]
    assert [m.memory_id for m in chosen("where is the embedding cache kept", found)] == ["f", "m"]


def test_a_long_memory_is_shown_as_its_passage_that_matters_verbatim() -> None:
    filler = [f"- touched file number {i} while wiring the dashboard" for i in range(20)]
    lines = [*filler[:10], "- Added `POST /api/hooks/session-end` route && wired it", *filler[10:]]
    text = "\n".join(lines)
    found = [memory("s", text, kind="summary", similarity=0.4)]
    passages = {"s": [("\n".join(lines[:10]), ELSEWHERE), ("\n".join(lines[10:]), QUERY)]}
    [shown] = chosen("which api route reports that a session ended", found, lambda ids: passages)
    assert "- Added `POST /api/hooks/session-end` route && wired it" in shown.text
    assert len(shown.text) <= block.EXCERPT + 10 and "number 3 " not in shown.text


def test_a_handful_of_items_at_most() -> None:
    found = [memory(f"m{i}", f"fact {i} about the widget {i * 'x'}") for i in range(12)]
    assert len(chosen("tell me about the widget", found)) == block.MAX_ITEMS


def test_an_opinion_is_shown_only_for_a_prompt_near_its_question() -> None:
    opinion = memory("o", "Memory contradicts MySQL (0.7)", kind="opinion", similarity=0.35)
    fact = memory("f", "we chose PostgreSQL over MySQL", similarity=0.45)
    assert [m.memory_id for m in chosen("should we use MySQL?", [opinion, fact])] == ["f"]
    near = memory("o", "Memory contradicts MySQL (0.7)", kind="opinion", similarity=0.8)
    assert "o" in [m.memory_id for m in chosen("should we use MySQL?", [near, fact])]


def test_headings_say_what_they_hold_and_each_item_when_it_was_true() -> None:
    shown = [
        Shown("f", "fact", "make dist && twine check dist/* > /dev/null", DAY, "decisions"),
        Shown("e", "fact", "`mix test` failed with: BadMapError. Fixed by ...", DAY, "errors"),
        Shown("p", "prompt", "start phoenix in background", DAY),
        Shown("o", "opinion", "Memory contradicts MySQL", DAY),
    ]
    text = render.render(shown, 6_000)
    assert (
        "## Preferences and decisions\n- [2026-02-12] make dist && twine check dist/* > /dev/null\n" in text
    )
    assert "## Errors met and how they were fixed\n" in text
    assert "## Said in earlier sessions\n- [2026-02-12] the user: start phoenix in background\n" in text
    assert "## reverie's own reflection (an opinion formed on request, not a fact)\n" in text
    assert "Earlier in the conversation" not in text


@pytest.mark.parametrize("limit", [400, 50])
def test_the_block_keeps_within_its_budget(limit: int) -> None:
    shown = [Shown(f"f{i}", "fact", f"fact number {i} " * 10, DAY) for i in range(6)]
    text = render.render(shown, limit)
    assert len(text) <= limit and (text == "" or text.endswith("</reverie-memory>"))


def test_an_earlier_question_is_no_answer_nor_opens_the_block() -> None:
    echo = memory("q", "explain how python decorators work", kind="prompt", score=0.9, similarity=1.0)
    other = memory("o", "Which API route reports a session's end?", kind="prompt", similarity=0.6)
    far = memory("f", "the project depends on ash 3.0", similarity=0.1)
    assert chosen("explain how python decorators work", [echo, other, far]) == []
    said = memory("s", "use the /api/hooks/session-end route", kind="prompt", similarity=0.6)
    assert [m.memory_id for m in chosen("which route reports a session's end", [other, said])] == ["s"]


@pytest.mark.parametrize(
    ("said", "asks"),
    [
        ("How do I deploy to fly.io?", True),
        ("what is the staging cluster called", True),
        ("explain how python decorators work", True),
        ("Quelle est la version de Phoenix ?", True),
        ("Do not use pip, use uv", False),
        ("When running tests, always use uv run pytest -x", False),
        ("Comment out the flaky test in ci.yml", False),
        ("Where possible prefer httpx over requests", False),
        ("Should be fine to use uv sync --frozen", False),
        ("Always ask me before pushing?", False),  # a rule, whatever its punctuation
        ("The alias runs credo. Which tasks does it run in the tracing worktree?", True),
        ("Dialyzer kept blocking the commit.\nWhat was the real cause in the end?", True),
        ("The build broke. Fix it, and never skip the tests. Is that clear?", False),
        ("Which of these is faster? I went with httpx.", True),
        ("Use uv for everything. It is faster than pip.", False),
        ("We run Postgres 15 with pgvector. Can you add an index on the vectors table?", False),
        ("We run Postgres 15 with pgvector. Did anyone add an index on the vectors table?", True),
    ],
)
def test_a_question_is_what_asks_not_an_instruction_that_opens_alike(said: str, asks: bool) -> None:
    assert block.asked_before("prompt", said, frozenset({"unrelated"})) is asks


def test_prose_abbreviations_are_no_names_from_code() -> None:
    found = [memory("m", "CI/CD runs e.g. on push, i.e. always", similarity=0.1)]
    assert chosen("explain decorators, e.g. in CI/CD and/or I/O", found) == []
    named = [memory("m", "the cache lives in cache_key.py", similarity=0.1)]
    assert [m.memory_id for m in chosen("what does cache_key.py hold", named)] == ["m"]


def test_a_long_memory_is_as_near_as_its_nearest_passage() -> None:
    lines = [f"- unrelated line {i} about the dashboard widgets" for i in range(30)]
    text = "\n".join([*lines, "- the route is POST /api/hooks/session-end"])
    diluted = memory("s", text, kind="summary", similarity=0.15)  # the mean of its chunks
    passages = {
        "s": [
            ("\n".join(lines), ELSEWHERE),
            (lines[-1] + "\n- the route is POST /api/hooks/session-end", QUERY),
        ]
    }
    [shown] = chosen("which route reports a session's end", [diluted], lambda ids: passages)
    assert "/api/hooks/session-end" in shown.text


def test_a_fact_drawn_from_a_whole_batch_stands_for_no_turn() -> None:
    turn = memory("p", "deploy with fly deploy --remote-only", kind="prompt", score=0.9)
    llm_fact = memory("f", "the app deploys on fly.io", score=0.8, derived_from=["p", "last"])
    assert {m.memory_id for m in chosen("how is the app deployed", [turn, llm_fact])} == {"p", "f"}


def test_a_contrary_memory_is_not_taken_for_one_said_already() -> None:
    found = [
        memory("a", "Squash commits before merging", score=0.9),
        memory("b", "Don't squash commits before merging", score=0.8),
    ]
    assert [m.memory_id for m in chosen("should I squash commits before merging", found)] == ["a", "b"]


def test_each_memory_says_why_it_was_given_or_left_out() -> None:
    found = [
        memory("q", "How long do the tail workers wait before they ingest?", kind="prompt", score=0.9),
        memory("a", "tail workers debounce ingest by 500 ms", score=0.6, similarity=0.45),
        memory("d", "the tail workers debounce ingest by 500 ms", score=0.5, similarity=0.44),
        memory("far", "the project depends on ash 3.0", score=0.4, similarity=0.1),
        memory("chat", "ingest it all today please", kind="message", score=0.3, similarity=0.05),
    ]
    shown, left = block.select_explained(
        "how long do the tail workers wait before they ingest", found, QUERY, no_passages, rarity
    )
    assert [(m.memory_id, m.passed) for m in shown] == [
        (
            "a",
            "the model puts it at 0.45 of the prompt, the floor being 0.25,"
            " and it holds 60% of the prompt's words",
        )
    ]
    assert left == {
        "q": "a question asked before (the prompt's earlier copy, or a question), no answer",
        "d": "what it says, one given before it said",
        "far": "the model puts it at 0.10, below the floor 0.25",
        "chat": "the model puts it at 0.05, below the floor 0.25",
    }
    nothing = [memory("x", "the project depends on ash 3.0", similarity=0.25)]
    assert block.select_explained("explain python decorators", nothing, QUERY, no_passages, rarity) == (
        [],
        {"x": "it holds 0% of the prompt's words (by rarity), too few for a memory the model puts at 0.25"},
    )
    nothing = [memory("x", "python decorators wrap a function", similarity=0.28)]
    assert block.select_explained("explain python decorators", nothing, QUERY, no_passages, rarity) == (
        [],
        {"x": "nothing answers: the nearest is at 0.28, the block's floor 0.3"},
    )


def test_what_the_agent_holds_already_is_not_given_again() -> None:
    claude_md = "# Testing\n- Run the tests with `mix test --warnings-as-errors`.\n- Format with mix format."
    found = [
        memory("a", "Run the tests with mix test --warnings-as-errors", score=0.9),
        memory("b", "The CI runs mix test on Elixir 1.19 and OTP 28", score=0.6),
    ]
    prompt = "how do we run the tests in CI?"
    assert [m.memory_id for m in select(prompt, found, QUERY, no_passages, rarity)] == ["a", "b"]
    assert [m.memory_id for m in select(prompt, found, QUERY, no_passages, rarity, [claude_md])] == ["b"]


def test_a_window_does_not_say_its_heading_twice() -> None:
    """The embedder's chunks may begin mid-line: a piece of the heading ("(exit 0):") is no line
    of the window, the heading going with it already."""
    heading = "Ran uv tool uninstall review-extractor && uv tool install . (exit 0):"
    output = [f"+ package-{n}==1.{n}.0 installed from the local index" for n in range(2)] + ["-" * 500]
    text = "\n".join([heading, "Resolved 4 packages in 42ms", *output])
    chunks = [f"{heading}\nResolved 4 packages in 42ms", "(exit 0):\n" + "\n".join(output)]

    def passages(memory_ids: list[str]) -> dict[str, list[tuple[str, Vector]]]:
        return {"u": [(chunk, QUERY * 0.5) for chunk in chunks]}

    found = [memory("u", text, kind="passage", similarity=0.5)]
    [shown] = chosen("which packages did uv tool install resolve?", found, passages)
    assert shown.text.startswith(heading) and shown.text.count("(exit 0)") == 1


def test_a_passage_is_shown_under_where_it_came_from() -> None:
    lines = [f'  "dep{n}": "^{n}.0.0",' for n in range(40)]
    text = "Read assets/package.json:\n{\n" + "\n".join(lines) + '\n  "test": "vitest run"\n}'
    passage = memory("p", text, kind="passage", similarity=0.5)
    [shown] = chosen("which command runs the frontend test suite?", [passage])
    assert shown.text.startswith("Read assets/package.json: ") and '"test": "vitest run"' in shown.text
    assert len(shown.text) < len(text)  # the window that answers, not the whole passage
    assert render.render([shown], 2_000).count("Read assets/package.json") == 1


def test_a_long_memory_is_judged_by_the_window_it_would_show() -> None:
    """A long summary holds every word of the prompt somewhere, one a paragraph: the window it
    would show holds one of them, no answer; a short note holding two of them is one."""
    topics = ["sweeper", "ttl", "registry", "pubsub", "tmux", "pane", "heatmap", "oban", "credo", "dialyzer"]
    filler = "the work went on as planned and nothing else of note happened in this part " * 4
    summary = "\n".join(f"{filler}{topic}." for topic in topics)
    long = memory("long", summary, kind="message", similarity=0.45)
    note = memory("note", "the sweeper uses a ttl of 90 seconds", kind="message", similarity=0.45)
    prompt = " ".join(topics) + "?"
    assert [m.memory_id for m in chosen(prompt, [long, note])] == ["note"]


def test_what_its_window_leaves_out_opens_no_block() -> None:
    """The long summary is what reached the block's floor; its window fails, and a note the model
    puts below the block's floor does not answer alone."""
    topics = ["sweeper", "ttl", "registry", "pubsub", "tmux", "pane", "heatmap", "oban", "credo", "dialyzer"]
    filler = "the work went on as planned and nothing else of note happened in this part " * 4
    long = memory("long", "\n".join(f"{filler}{t}." for t in topics), kind="message", similarity=0.35)
    note = memory("note", "the sweeper uses a ttl of 90 seconds", kind="message", similarity=0.27)
    assert chosen(" ".join(topics) + "?", [long, note]) == []


def test_a_long_request_is_judged_whole() -> None:
    """A request tells by its rule, which its window may not show."""
    steps = " ".join(f"then check step {n} of the rollout by hand." for n in range(20))
    told = f"Never merge on Fridays. {steps} The v2 route reports session ends."
    request = memory("r", told, kind="prompt", similarity=0.5)
    assert [m.memory_id for m in chosen("which route reports a session's end?", [request])] == ["r"]


def test_a_heading_of_a_passage_is_shown_with_what_it_introduces() -> None:
    """Credo's "Software Design" holds the prompt's words; its finding, two lines on past a box's
    edge, is the answer."""
    noise = "\n".join(f"┃ lib/spotter/module_{n}.ex:{n}:5 checked, nothing to report" for n in range(12))
    notes = "\n".join(f"┃ lib/design_{n}.ex: its design is checked, nothing to report" for n in range(5))
    text = (
        "Ran mix credo --strict (exit 0):\nChecking 87 source files ...\n  Software Design\n┃\n"
        "┃ [D] ↘ Nested modules could be aliased at the top of the invoking module.\n"
        f"┃       lib/spotter/application.ex:9:5\n{noise}\n{notes}\n  Code Readability\n┃\n"
        "┃ [R] ↘ Prefer using an implicit `try` rather than explicit `try`."
    )
    passage = memory("c", text, kind="passage", similarity=0.5)
    [shown] = chosen("what did credo say about software design?", [passage])
    assert "Nested modules could be aliased" in shown.text and len(shown.text) < len(text)


def test_a_request_that_tells_nothing_and_a_memory_sharing_no_word_are_no_answer() -> None:
    """The user's earlier requests ("write a limerick ...") tell nothing to give again, and the
    model puts a project's facts above the floor for questions of its field it does not answer."""
    limerick = memory("l", "write a limerick about a cat who hates Mondays", kind="prompt", similarity=0.45)
    deploy = memory("d", "deploy with `fly deploy --remote-only` from now on", kind="prompt", similarity=0.45)
    depends = memory("f", "spotter uses, to develop, usage_rules ~> 1.0", similarity=0.35)
    assert chosen("write a haiku about autumn leaves and a cat", [limerick]) == []
    debounce = memory("j", "write a debounce function in javascript", kind="prompt", similarity=0.5)
    assert chosen("how do I write a binary search in JavaScript?", [debounce]) == []  # a name, no more
    leak = memory("g", "fix the goroutine leak of our gRPC server in server/stream.go", kind="prompt")
    assert chosen("how do goroutines differ from threads in server/stream.go?", [leak]) == []  # a path
    assert chosen("unique_ptr vs shared_ptr, when do I need each?", [depends]) == []
    assert [m.memory_id for m in chosen("how do we deploy the app?", [limerick, deploy])] == ["d"]


def test_a_prompt_that_states_what_is_so_is_given_again() -> None:
    """What the user told ("we moved the API to port 8080") answers a later question; a request
    framed as a wish ("I want you to ...") or a guess ("I think ...") tells nothing."""
    moved = memory("m", "We moved the API to port 8080 last week", kind="prompt", similarity=0.5)
    wish = memory("w", "I want you to move the API to port 8080", kind="prompt", similarity=0.5)
    guess = memory("g", "I think the API port is 8080 now", kind="prompt", similarity=0.5)
    went = memory("s", "Hi! Yeah, I went to the support group on May 7.", kind="prompt", similarity=0.5)
    assert [m.memory_id for m in chosen("which port does the API listen on?", [moved, wish, guess])] == ["m"]
    assert [m.memory_id for m in chosen("when did I go to the support group?", [went])] == ["s"]


def test_a_prompt_that_reports_what_is_wrong_for_the_agent_to_fix_is_not_given_again() -> None:
    """ "The app crashes ..., fix it": what the agent found and did is memory of its own."""
    reports = [
        "the Django migration 0042 fails with IntegrityError on the orders table, fix it",
        "The Django migration 0042 fails on the orders table. Investigate the migration.",
        "our migration on the orders table fails, rewrite it in migrations/0042_orders.py",
    ]
    prompt = "write a migration that adds a nullable archived_at column to the orders table"
    for report in reports:
        assert chosen(prompt, [memory("r", report, kind="prompt", similarity=0.5)]) == [], report
    told = memory("t", "The migration 0042 on the orders table ran on Friday", kind="prompt", similarity=0.5)
    assert [m.memory_id for m in chosen(prompt, [told])] == ["t"]


def test_the_same_sentence_again_with_another_number_is_said_once() -> None:
    """Two copies of a turn that differ in a number: the second would show "(27)" alone."""
    said = "Caroline: I went to a LGBTQ support group yesterday and it was so powerful."
    found = [
        memory("a", f"{said} (21)", kind="prompt"),
        memory("b", f"{said} (27)", kind="prompt", score=0.4),
    ]
    assert [m.memory_id for m in chosen("when did Caroline go to the LGBTQ support group?", found)] == ["a"]
