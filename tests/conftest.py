"""The tests' fixtures; what tests share besides is in tests/support/."""

from collections.abc import Iterator

import pytest

from reverie.testing import Folding
from schemas.settings import Settings
from tests.support.captures import FIXTURES, HOOK_PAYLOADS, TRANSCRIPTS
from tests.support.claude_code import claude_code
from tests.support.processes import environ_of, fresh_home, running_stack, settings_of

# What makes a test slow, by the fixtures it asks for: each costs seconds to a minute a test.
SLOW_FIXTURES = {
    "stack": "boots a whole stack (reverie up)",
    "claude": "runs the real Claude Code CLI",
}


def pytest_configure(config: pytest.Config) -> None:
    if not HOOK_PAYLOADS.is_dir() or not TRANSCRIPTS.is_dir():
        raise pytest.UsageError(f"the shared fixtures are missing: expected them at {FIXTURES} (../shared)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `slow` every test that boots real processes (marked `integration`) or asks for a slow
    fixture: `pytest -m "not slow"` is the fast loop, and CI runs it first."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("integration") or fixtures & SLOW_FIXTURES.keys():
            item.add_marker(pytest.mark.slow)


home = pytest.fixture(fresh_home, name="home")
env = pytest.fixture(environ_of, name="env")
settings = pytest.fixture(settings_of, name="settings")
stack = pytest.fixture(running_stack, name="stack")


@pytest.fixture(scope="session")
def claude() -> str:
    """The real Claude Code CLI (tests/support/claude_code.py), installed once per checkout."""
    return claude_code()


@pytest.fixture
def folding(settings: Settings) -> Iterator[Folding]:
    """An event log and a projector over it, in the test's data directory."""
    folded = Folding(settings)
    yield folded
    folded.close()
