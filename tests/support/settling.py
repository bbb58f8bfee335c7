"""Waiting for a stack to have nothing left to do."""

from typing import Any

from benchmarks.coding_memory import settled_state
from schemas.settings import Settings
from tests.support.processes import wait_for
from workers.recall_service import REFRESH_S


def settled(settings: Settings, timeout: float = 600) -> tuple[int, int, int]:
    """The stack's state once it has nothing left to do, twice in a row, 2 s apart: the recall
    service reads what the embedder published once a second (`REFRESH_S`), so by then it has
    read the last of it (two looks 50 ms apart let a recall read the vectors of before)."""
    seen: list[Any] = []

    def steady() -> Any:
        seen.append(settled_state(settings))
        return len(seen) > 1 and seen[-1] is not None and seen[-1] == seen[-2] and seen[-1]

    state: tuple[int, int, int] = wait_for(
        steady, timeout=timeout, what="the stack to settle", every=2 * REFRESH_S
    )
    return state
