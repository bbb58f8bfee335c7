"""The dashboard as a user meets it: served by a real stack holding the fixture transcripts,
opened in a real headless Chromium (tests/support/browser.py). Every page loads with no console
error and shows the numbers `reverie sql` gives; the time slider changes the facts shown; what a
user forgets or remembers there is an event with source `dashboard`, and recall changes with it;
a request without the token, from another Host or another Origin is refused. Over a data
directory of odd names, served by `reverie dashboard --serve` alone: a bidirectional control
left open reverses nothing after it, and names of 10,000 characters widen no page. Each page's
screenshot lands in .cache/dashboard/."""

import http.client
import re
import subprocess
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser

from ingest.injection import ask
from reverie.dashboard.guard import cookie_name, cookie_value
from reverie.dashboard.server import running, url
from reverie.loopback import Endpoint
from schemas import kinds
from schemas.settings import Settings
from tests.support.browser import PAGES, Watched, chromium
from tests.support.captures import TRANSCRIPTS
from tests.support.processes import BIN, Stack, one_stack_per_module, wait_for
from tests.support.settling import settled

pytestmark = pytest.mark.integration

home, env, settings, stack = one_stack_per_module()


@pytest.fixture(scope="module")
def dashboard(stack: Stack, env: dict[str, str], settings: Settings) -> Endpoint:
    """The stack's dashboard, once the fixture transcripts are imported and thought over."""
    done = subprocess.run([str(BIN), "import", str(TRANSCRIPTS)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    settled(settings)
    thought = subprocess.run(
        [str(BIN), "think", "all", "--now"], env=env, capture_output=True, text=True, timeout=600
    )
    assert thought.returncode == 0, thought.stderr
    settled(settings)
    endpoint: Endpoint = wait_for(lambda: running(settings), timeout=60, what="the dashboard to listen")
    return endpoint


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from chromium()


@pytest.fixture
def watched(browser: Browser, dashboard: Endpoint) -> Iterator[Watched]:
    """A page that has opened the URL `reverie dashboard` prints (so holds the cookie)."""
    opened = Watched(browser)
    opened.page.goto(url(dashboard))
    opened.page.wait_for_selector("#activity .uplot")
    yield opened
    opened.close()


def one(stack: Stack, sql: str) -> Any:
    [(value,)] = stack.query(sql)
    return value


def number(watched: Watched, selector: str) -> int:
    return int(watched.page.locator(selector).inner_text().replace(",", ""))


def test_every_page_loads_clean_and_shows_what_sql_says(
    watched: Watched, dashboard: Endpoint, stack: Stack
) -> None:
    page = watched.page
    assert page.url == dashboard.origin + "/"  # the token traded for a cookie, gone from the address
    page.wait_for_selector("#health td:text('running (pid')")
    assert number(watched, "#n-sessions b") == one(stack, "SELECT count(*) FROM sessions") >= 5
    # what was asked to be forgotten is not held (the tests below forget one)
    held = "facts_current f WHERE NOT EXISTS (SELECT 1 FROM forgotten WHERE memory_id = f.fact_id)"
    assert number(watched, "#n-facts b") == one(stack, f"SELECT count(*) FROM {held}") > 50
    entities = f"SELECT count(DISTINCT e) FROM (SELECT unnest([source, target]) AS e FROM {held})"
    assert number(watched, "#n-entities b") == one(stack, entities)
    shown_kinds = {
        row.locator("td").nth(0).inner_text(): int(row.locator("td").nth(1).inner_text())
        for row in page.locator("#kinds tbody tr").all()
    }
    assert shown_kinds == dict(stack.query("SELECT kind, count(*) FROM memory_texts GROUP BY kind"))
    watched.screenshot("overview")
    for name, (path, ready) in PAGES.items():
        page.goto(dashboard.origin + path)
        page.wait_for_selector(ready)
        watched.screenshot(name)
    assert watched.errors == []

    page.goto(dashboard.origin + "/sessions")
    sessions = stack.query("SELECT session_id FROM sessions ORDER BY started_at DESC")
    assert page.locator("table.sessions tbody tr").count() == min(len(sessions), 50)
    page.locator("table.sessions tbody tr a").first.click()
    page.wait_for_selector("#events")
    newest = sessions[0][0]
    assert page.url.endswith(f"/sessions/{newest}")
    events = one(stack, f"SELECT count(*) FROM events WHERE session_id = '{newest}'")
    assert page.locator("#events tbody tr").count() == events > 10
    failures = one(stack, f"SELECT count(*) FROM errors WHERE session_id = '{newest}'")
    assert page.locator("#failures tbody tr").count() == failures > 0
    assert page.locator("#fixes li").count() > 0  # what its errors taught: solved_by facts
    watched.screenshot("session")

    page.goto(dashboard.origin + "/prompts")
    prompts = one(stack, "SELECT count(*) FROM prompts WHERE agent = 'main'")
    assert page.locator("#prompts tbody tr").count() == min(prompts, 50)
    page.goto(dashboard.origin + "/memory")
    assert page.locator("#quality tr:has-text('facts') td.n").first.inner_text() == str(
        one(stack, "SELECT facts FROM memory_health")
    )
    page.goto(dashboard.origin + "/learned")
    communities = one(stack, "SELECT count(*) FROM communities WHERE len(members) > 0")
    assert page.locator("#communities tbody tr").count() == communities > 0
    assert watched.errors == []


def shown_graph(watched: Watched) -> tuple[int, int]:
    counted = re.match(r"(\d+) entities, (\d+) facts", watched.page.locator("#counts").inner_text())
    assert counted, watched.page.locator("#counts").inner_text()
    return int(counted[1]), int(counted[2])


def test_the_time_slider_shows_the_graph_as_believed_then(
    watched: Watched, dashboard: Endpoint, stack: Stack
) -> None:
    page = watched.page
    page.goto(dashboard.origin + "/graph")
    page.wait_for_selector("#graph[data-ready=yes]")
    between = "source IS NOT NULL AND target IS NOT NULL"
    assert shown_graph(watched)[1] == one(stack, f"SELECT count(*) FROM facts_current WHERE {between}") > 20
    # the moment the first fact held: the transcripts are months old, imported just now
    first = one(stack, f"SELECT epoch(min(valid_at))::BIGINT FROM facts WHERE {between}") + 1
    true_then = one(stack, f"SELECT count(*) FROM facts_as_of(to_timestamp({first}), now()) WHERE {between}")
    known_then = one(
        stack,
        f"SELECT count(*) FROM facts_as_of(to_timestamp({first}), to_timestamp({first})) WHERE {between}",
    )
    assert known_then == 0 < true_then < shown_graph(watched)[1]

    page.locator("#when").fill(str(first))  # as believed then: nothing was known yet
    page.wait_for_selector("#counts:text('0 entities, 0 facts')")
    assert page.locator("#when-shown").inner_text() != "now"
    page.locator("#known").select_option("now")  # what was true then, as known now
    wait_for(lambda: shown_graph(watched)[1] == true_then, what="the graph of what was true then")
    watched.screenshot("graph-then")
    page.locator("#now").click()
    wait_for(lambda: shown_graph(watched)[1] > true_then, what="the graph of now again")
    assert watched.errors == []


def recalled(settings: Settings, text: str, project: str) -> list[str]:
    answer = ask(settings.recall_socket_path, {"prompt": text, "project": project, "limit": 10}, 30.0)
    return [r["memory_id"] for r in answer["recall"]["results"]]


def test_forgetting_a_fact_from_its_provenance_is_an_event_and_recall_drops_it(
    watched: Watched, dashboard: Endpoint, stack: Stack, settings: Settings
) -> None:
    [(fact_id, text, project, entity_id, entity)] = stack.query(
        "SELECT f.fact_id, f.description, f.project, e.entity_id, e.name FROM facts_current f "
        "JOIN entities e ON e.entity_id = f.target "
        "WHERE f.relation = 'depends_on' ORDER BY f.fact_id LIMIT 1"
    )
    assert fact_id in recalled(settings, text, project)
    page = watched.page
    page.goto(f"{dashboard.origin}/graph?{urlencode({'project': project})}")
    page.wait_for_selector("#graph[data-ready=yes]")
    page.locator("#q").fill(entity)
    page.locator("#find button").click()
    page.locator(f"#panel a[data-entity='{entity_id}']").click()
    page.wait_for_selector(f"#panel h3:text-is('{entity}')")
    page.locator("#panel li", has_text=text).locator("a", has_text="why").click()
    page.wait_for_selector("#panel .why")
    assert text in page.locator("#panel .why").inner_text()  # where it came from
    watched.screenshot("graph-why")
    page.locator("#panel input[name=reason]").fill("we dropped it")
    page.locator("#panel button", has_text="forget this fact").click()
    page.wait_for_selector(f".said:has-text('forgotten: {fact_id}')")

    recorded = wait_for(
        lambda: stack.query(
            "SELECT source, project, payload->>'reason' FROM events "
            f"WHERE kind = 'memory.forgotten' AND payload->>'memory_id' = '{fact_id}'"
        ),
        what="the forgetting archived",
    )
    assert recorded == [("dashboard", project, "we dropped it")]
    wait_for(lambda: fact_id not in recalled(settings, text, project), timeout=60, what="recall to drop it")
    edges = page.request.get(f"{dashboard.origin}/api/graph?{urlencode({'project': project})}").json()[
        "edges"
    ]
    assert [e["now"] for e in edges if e["fact_id"] == fact_id] == ["forgotten"]  # grey in the graph
    page.goto(f"{dashboard.origin}/memory?{urlencode({'project': project})}")
    assert fact_id in page.locator("#forgotten").inner_text()
    page.locator("#forgotten a", has_text=fact_id).click()  # its strength over time
    page.wait_for_selector("#strength[data-ready=yes]")
    assert text in page.locator("#strength-of").inner_text()
    watched.screenshot("memory-forgotten")
    assert watched.errors == []


def test_correcting_a_fact_supersedes_it_with_the_users_words(
    watched: Watched, dashboard: Endpoint, stack: Stack, settings: Settings
) -> None:
    [(wrong, text, project, entity_id)] = stack.query(
        "SELECT f.fact_id, f.description, f.project, f.target FROM facts_current f "
        "WHERE f.relation = 'depends_on' ORDER BY f.fact_id LIMIT 1 OFFSET 1"
    )
    page = watched.page
    page.goto(f"{dashboard.origin}/graph?{urlencode({'project': project})}")
    page.wait_for_selector("#graph[data-ready=yes]")
    [(name,)] = stack.query(f"SELECT name FROM entities WHERE entity_id = '{entity_id}'")
    page.locator("#q").fill(name)
    page.locator("#find button").click()
    page.locator(f"#panel a[data-entity='{entity_id}']").click()
    page.locator("#panel li", has_text=text).locator("a", has_text="why").click()
    right = f"{text.rsplit(' ', 1)[0]} 9.9, pinned since the upgrade"
    page.locator("#panel form.correct input[name=text]").fill(right)
    page.locator("#panel button", has_text="correct it").click()
    page.wait_for_selector(f".said:has-text('corrected: {wrong}')")

    [(correction, source, said)] = wait_for(
        lambda: stack.query(
            f"SELECT id, source, payload->>'text' FROM events WHERE kind = 'fact.corrected' "
            f"AND payload->>'fact_id' = '{wrong}'"
        )
    )
    assert (source, said) == ("dashboard", right)
    forgotten = f"SELECT memory_id, source FROM forgotten WHERE event_id = '{correction}'"
    wait_for(lambda: stack.query(forgotten) == [(wrong, "dashboard")], what="the wrong fact forgotten")
    fields = "kind, project, payload->>'fact_id', payload->>'by_fact_id', payload->>'description'"

    def derived() -> list[tuple[Any, ...]]:  # from the correction alone, by extraction
        return stack.query(
            f"SELECT {fields} FROM events WHERE list_contains(caused_by, '{correction}') ORDER BY kind"
        )

    [asserted, superseded] = wait_for(lambda: len(derived()) == 2 and derived())
    new_id = asserted[2]
    assert asserted == ("fact.asserted", project, new_id, None, right) and new_id != wrong
    assert superseded == ("fact.superseded", project, wrong, new_id, None)
    both = f"SELECT fact_id FROM facts_current WHERE fact_id IN ('{wrong}', '{new_id}')"
    wait_for(lambda: stack.query(both) == [(new_id,)], what="the correction folded")

    def recalls_the_correction() -> bool:
        found = recalled(settings, right, project)
        return bool(found) and found[0] == new_id and wrong not in found

    wait_for(
        recalls_the_correction, timeout=60, what="recall to give the correction, not the fact it corrects"
    )
    assert watched.errors == []


def test_what_is_remembered_there_is_an_event_recall_finds(
    watched: Watched, dashboard: Endpoint, stack: Stack, settings: Settings
) -> None:
    project = one(stack, "SELECT project FROM sessions ORDER BY started_at LIMIT 1")
    page = watched.page
    page.goto(f"{dashboard.origin}/memory?{urlencode({'project': project})}")
    said = "Release builds are signed with the key in vault path secret/release-signing"
    page.locator("input[name=text]").fill(said)
    page.locator("button", has_text="remember").click()
    page.wait_for_selector(".said:has-text('remembered')")
    [(event_id, source)] = wait_for(
        lambda: stack.query(
            f"SELECT id, source FROM events WHERE kind = 'memory.remembered' AND payload->>'text' = '{said}'"
        ),
        what="the memory archived",
    )
    assert source == "dashboard"
    wait_for(lambda: event_id in recalled(settings, "how are release builds signed?", project), timeout=60,
             what="recall to find it")  # fmt: skip
    assert watched.errors == []


def test_without_the_token_or_from_elsewhere_the_real_server_refuses(dashboard: Endpoint) -> None:
    def status(method: str, headers: dict[str, str]) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", dashboard.port, timeout=30)
        connection.request(method, "/api/graph", headers=headers)
        answer = connection.getresponse()
        answer.read()
        connection.close()
        return answer.status

    cookie = {"Cookie": f"{cookie_name(dashboard.port)}={cookie_value(dashboard.token)}"}
    assert status("GET", cookie) == 200
    assert status("GET", {}) == 401
    assert status("GET", {**cookie, "Host": "rebound.example"}) == 403
    assert status("POST", {**cookie, "Origin": "http://evil.example"}) == 403
    # another server on this machine's loopback is the same site to a browser, not the same origin
    assert status("POST", {**cookie, "Origin": "http://127.0.0.1:1"}) == 403


def prompted(settings: Settings, session: str, project: str, prompt: str) -> str:
    """A prompt recorded as the hook records it, then what the hook is given for it, asked of
    the service as the hook asks it, but with time to answer on a busy machine (the hook waits 2 s)."""
    from ingest.emit import Emitter
    from schemas.observed import PromptSubmitted
    from workers.redis_client import connect

    submitted = PromptSubmitted(session_id=session, prompt=prompt)
    with Emitter(connect(settings), kinds.SOURCE_CLAUDE_CODE) as out:
        out.emit(kinds.PROMPT_SUBMITTED, submitted, project=project, session_id=session)
    request: dict[str, object] = {"hook": "UserPromptSubmit", "prompt": prompt, "project": project}
    request |= {"session_id": session, "deadline_s": 10.0}
    answer = ask(settings.recall_socket_path, request, 30.0)
    assert "context" in answer, answer
    return str(answer["context"])


def test_a_prompt_shows_what_it_was_given_and_why_and_the_playground_what_it_would_be(
    watched: Watched, dashboard: Endpoint, stack: Stack, settings: Settings
) -> None:
    project = one(stack, "SELECT project FROM sessions ORDER BY started_at LIMIT 1")
    asked = "how do I start the phoenix server?"
    page = watched.page
    page.goto(f"{dashboard.origin}/prompts?{urlencode({'project': project})}")
    page.locator("input[name=try]").fill(asked)
    page.locator("#playground button").click()
    page.wait_for_selector("#injected")
    previewed = page.locator("#injected").inner_text()
    assert "phoenix" in previewed.lower()
    assert page.locator("#candidates tr.given").count() >= 1
    assert "the floor being" in page.locator("#candidates tr.given").first.inner_text()
    left_out = page.locator("#candidates tbody tr:not(.given) td:last-child").all_inner_texts()
    assert left_out and all(why.strip() for why in left_out)  # each says why it was not given
    watched.screenshot("prompts-playground")

    injected = prompted(settings, "dashboard-prompt-1", project, asked)
    assert injected.strip() == previewed.strip()  # the playground shows what the hook gives
    in_session = "FROM {} WHERE session_id = 'dashboard-prompt-1'"
    wait_for(
        lambda: one(stack, f"SELECT count(*) {in_session.format('retrievals')}") == 1
        and one(stack, f"SELECT count(*) {in_session.format('prompts')}") == 1,
        what="the hook's prompt and recall folded",
    )  # fmt: skip
    # the playground's recall, asked before the hook's, was never recorded (it would be folded by now)
    assert one(stack, f"SELECT count(*) FROM retrievals WHERE query = '{asked}'") == 1
    page.goto(f"{dashboard.origin}/prompts?{urlencode({'project': project})}")
    row = page.locator("#prompts tbody tr", has_text=asked).first
    given = row.locator("li")
    assert given.count() == injected.count("\n- ")  # each memory the hook gave, once
    assert "score" in given.first.inner_text() and "the floor being" in given.first.inner_text()
    watched.screenshot("prompts")
    assert watched.errors == []


# Stored text at its oddest: names of 10,000 characters with no space, and bidirectional controls
# left open (a right-to-left override, embedding or isolate, a first-strong isolate before Arabic),
# each followed by the words "alpha" and "omega" (an Arabic word between them, where only an
# override would reverse two Latin words), which must still read left to right after it.
RLO, RLE, RLI, FSI = "\u202e", "\u202b", "\u2067", "\u2068"
ARABIC = "\u0645\u0644\u0641"  # "file"
CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"  # Bidi_Control
ODD = "/src/odd"
LONG = 10_000
BIDI = re.compile(f"[{CONTROLS}]")


def odd_events() -> list[Any]:
    """Two sessions of project ODD, one of odd directions, one of long names, and what was
    learned from them, as the hooks and the workers record them."""
    from datetime import UTC, datetime, timedelta

    from reverie.testing import event_at
    from schemas.memory import (
        CommunityDetected,
        EntityObserved,
        EpisodeRecorded,
        FactAsserted,
        PreferenceCrystallized,
    )
    from schemas.observed import MemoryForgotten, PromptSubmitted, SessionStarted, ToolUsed

    start = datetime(2026, 11, 2, 9, tzinfo=UTC)
    made: list[Any] = []

    def record(kind: str, payload: Any, session: str | None = None, derived: bool = False) -> None:
        when = start + timedelta(seconds=len(made))
        cause = (made[0].id,) if derived else ()
        made.append(event_at(kind, payload, when, project=ODD, session_id=session, caused_by=cause))

    for session in ("odd-bidi", "odd-long"):
        record(kinds.SESSION_STARTED, SessionStarted(session_id=session, source="startup", cwd=ODD), session)
    asked = PromptSubmitted(prompt=f"open /tmp/report{RLO}fdp.exe then alpha omega")
    record(kinds.PROMPT_SUBMITTED, asked, "odd-bidi")
    read = ToolUsed(tool_name="Read", tool_input={"file_path": f"/tmp/invoice{RLO}fdp.exe{CONTROLS}"})
    record(kinds.TOOL_USED, read, "odd-bidi")
    record(kinds.PROMPT_SUBMITTED, PromptSubmitted(prompt="q" * LONG), "odd-long")
    record(
        kinds.TOOL_USED,
        ToolUsed(tool_name="Read", tool_input={"file_path": "/tmp/" + "f" * LONG}),
        "odd-long",
    )
    for session, title, summary in (
        (
            "odd-bidi",
            f"Read {RLI}report alpha {ARABIC} omega",
            f"Read /tmp/invoice{RLO}fdp.exe, then alpha omega.",
        ),
        ("odd-long", "T" * LONG, "Read /tmp/" + "s" * LONG),
    ):
        episode = EpisodeRecorded(
            episode_id=f"ep-{session}", session_id=session, title=title, summary=summary, started_at=start
        )
        record(kinds.EPISODE_RECORDED, episode, derived=True)
    for entity_id, name in (
        ("e-bidi", f"cache{RLE} alpha {ARABIC} omega"),
        ("e-long", "N" * LONG),
        ("e-plain", "redis"),
    ):
        observed = EntityObserved(
            entity_id=entity_id, type="library", name=name, normalized_name=name.lower()
        )
        record(kinds.ENTITY_OBSERVED, observed, derived=True)
    for fact_id, source, said in (
        ("fact:odd-bidi", "e-bidi", f"the cache {RLO}fdp.exe alpha omega"),
        ("fact:odd-long", "e-long", "D" * LONG),
    ):
        fact = FactAsserted(
            fact_id=fact_id, source=source, relation="depends_on", target="e-plain", description=said
        )
        record(kinds.FACT_ASSERTED, fact, derived=True)
    for preference_id, statement in (
        ("pref-bidi", f"{FSI}{ARABIC} alpha {ARABIC} omega"),
        ("pref-long", "P" * LONG),
    ):
        preference = PreferenceCrystallized(
            preference_id=preference_id, statement=statement, strength=0.8, evidence=3
        )
        record(kinds.PREFERENCE_CRYSTALLIZED, preference, derived=True)
    community = CommunityDetected(
        community_id="c-long", members=["e-long", "e-plain"], label="N" * LONG, hub="e-long"
    )
    record(kinds.COMMUNITY_DETECTED, community, derived=True)
    record(kinds.MEMORY_FORGOTTEN, MemoryForgotten(memory_id="fact:odd-long", reason="R" * LONG))
    return made


@pytest.fixture(scope="module")
def odd() -> Iterator[str]:
    """`reverie dashboard --serve` as its own process over a data directory holding odd_events:
    the URL it prints (its token in it)."""
    import select
    import shutil
    import tempfile

    from reverie.testing import Folding
    from tests.support.processes import environ_of

    folder = tempfile.mkdtemp(prefix="rv-")
    folding = Folding(Settings(folder))
    folding.fold(odd_events())
    folding.close()
    command = [str(BIN), "dashboard", "--serve", "--port", "0"]
    server = subprocess.Popen(
        command, env=environ_of(folder), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert server.stdout is not None
        assert select.select([server.stdout], [], [], 60)[0], "the dashboard printed no URL"
        yield server.stdout.readline().decode().removeprefix("dashboard:").strip()
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def odd_page(browser: Browser, odd: str) -> Iterator[Watched]:
    opened = Watched(browser)
    opened.page.goto(odd)
    yield opened
    opened.close()


def reads_left_to_right(watched: Watched, selector: str) -> tuple[bool, str]:
    """Whether "alpha" is drawn left of "omega" in the first element `selector` finds holding
    both, and its text as shown."""
    found = watched.page.locator(selector, has_text="alpha").first
    found.wait_for()
    left: dict[str, float] = found.evaluate(
        """(element) => {
          const at = {};
          const walk = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
          for (let node = walk.nextNode(); node; node = walk.nextNode()) {
            for (const word of ["alpha", "omega"]) {
              const i = node.data.indexOf(word);
              if (i < 0 || word in at) continue;
              const range = document.createRange();
              range.setStart(node, i);
              range.setEnd(node, i + word.length);
              at[word] = range.getBoundingClientRect().left;
            }
          }
          return at;
        }"""
    )
    return left["alpha"] < left["omega"], found.inner_text()


def test_a_bidirectional_control_left_open_in_stored_text_reverses_nothing_after_it(
    odd_page: Watched, odd: str
) -> None:
    page, origin = odd_page.page, odd.partition("/?")[0]
    project = urlencode({"project": ODD})
    reordered, raw = [], []
    for path, selector, control in (
        ("/sessions/odd-bidi", "section.episode p", RLO),  # the episode the issue saw reversed
        ("/sessions/odd-bidi", "section.episode h2", RLI),
        ("/sessions/odd-bidi", "#events td", RLO),  # the prompt, as the session's event
        (f"/prompts?{project}", "#prompts td", RLO),
        (f"/learned?{project}", "#preferences td", FSI),
        ("/why/fact:odd-bidi", ".why h3", RLO),
        (f"/graph?{project}", "#graph[data-ready=yes]", None),
    ):
        page.goto(origin + path)
        if control is None:  # what the graph's script shows: an entity found by name
            page.wait_for_selector(selector)
            page.locator("#q").fill("cache")
            page.locator("#find button").click()
            selector, control = "#panel li", RLE
        in_order, text = reads_left_to_right(odd_page, selector)
        if not in_order or f"[U+{ord(control):04X}]" not in text:  # written out, where it was
            reordered.append((path, selector, text))
        raw += [(path, text) for text in BIDI.findall(page.locator("body").inner_text())]
    assert reordered == [] and raw == []
    page.goto(f"{origin}/sessions/odd-bidi")
    shown = "".join(f"[U+{ord(c):04X}]" for c in CONTROLS)  # each control of the file name's
    assert f"/tmp/invoice[U+202E]fdp.exe{shown}" in page.locator("#events").inner_text()
    assert odd_page.errors == []


def test_names_of_ten_thousand_characters_keep_every_page_within_the_window(
    odd_page: Watched, odd: str
) -> None:
    page, origin = odd_page.page, odd.partition("/?")[0]
    project = urlencode({"project": ODD})

    def fits(where: str) -> None:
        width, room = page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert width <= room, f"{where}: {width} px wide in a window of {room}"

    for path, ready, shown in (
        ("/", "#activity", "T"),  # the long session's episode
        ("/sessions", "table.sessions", "T"),
        ("/sessions/odd-long", "#events", "f"),  # its file name, as its event
        (f"/prompts?{project}", "#prompts", "q"),
        (f"/learned?{project}", "#communities", "N"),  # the long entity, its community's hub
        (f"/memory?{project}", "#forgotten", "R"),  # why the long fact was forgotten
        ("/why/fact:odd-long", ".why", "D"),
        (f"/graph?{project}", "#graph[data-ready=yes]", ""),
    ):
        page.goto(origin + path)
        page.wait_for_selector(ready)
        assert shown * 100 in page.locator("main").inner_text(), path
        fits(path)
    page.locator("#q").fill("NNNN")  # the graph's panel: the entity found, then shown
    page.locator("#find button").click()
    page.locator("#panel a").first.click()
    page.wait_for_selector("#panel h4")
    assert len(page.locator("#panel h3").inner_text()) == LONG
    fits("the graph's panel")
    odd_page.screenshot("long-names")
    assert odd_page.errors == []
