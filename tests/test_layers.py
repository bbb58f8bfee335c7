"""Imports run one way, down the floors: schemas <- ingest, projections <- workers <- reverie.

`schemas` imports none of ours; `ingest` and `projections` import `schemas` (and never each
other); `workers` imports those three; `reverie/`, the command line, sits on top. Imports inside
functions count as much as those at the top of a module.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAY_IMPORT: dict[str, set[str]] = {
    "schemas": set(),
    "ingest": {"schemas"},
    "projections": {"schemas"},
    "workers": {"schemas", "ingest", "projections"},
    "reverie": {"schemas", "ingest", "projections", "workers"},
}


def back_edges(root: pathlib.Path) -> list[str]:
    """Every import under `root` that runs against MAY_IMPORT, as `file:line imports module`."""
    found = []
    for room, allowed in MAY_IMPORT.items():
        for path in sorted((root / room).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in MAY_IMPORT and top != room and top not in allowed:
                        found.append(f"{path.relative_to(root)}:{node.lineno} imports {module}")
    return found


def test_imports_run_one_way() -> None:
    assert back_edges(ROOT) == []


# Inside workers/: the families of thinking workers import the seam (what a follower is and
# reads) and the shared rooms, never one another, nor the registry, the runner or the clock,
# which import them.
SEAM = {"workers.thinking.follower", "workers.thinking.reading"}
SHARED = {"workers.evidence", "workers.lifeline", "workers.llm", "workers.logs", "workers.redis_client"}
FAMILIES = {"workers.extraction", "workers.dynamics"}


def room_of(module: str) -> str:
    return next(
        (r for r in sorted(SEAM | SHARED | FAMILIES) if module == r or module.startswith(r + ".")), module
    )


def family_edges(root: pathlib.Path) -> list[str]:
    """Every import of a family or a shared room of workers/ that reaches past the seam."""
    found = []
    for room in sorted(FAMILIES | SHARED):
        folder = root / room.replace(".", "/")
        module = folder.with_suffix(".py")
        for path in sorted(folder.rglob("*.py")) if folder.is_dir() else [module] if module.exists() else []:
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                    continue
                target = room_of(node.module)
                allowed = SEAM | SHARED | {room} if room in FAMILIES else SHARED | {room}
                if target.startswith("workers") and target not in allowed:
                    found.append(f"{path.relative_to(root)}:{node.lineno} imports {node.module}")
    return found


def test_no_family_of_thinking_workers_imports_another() -> None:
    assert family_edges(ROOT) == []


def test_a_back_edge_is_found_wherever_it_hides(tmp_path: pathlib.Path) -> None:
    for room in MAY_IMPORT:
        (tmp_path / room).mkdir()
    (tmp_path / "schemas" / "events.py").write_text("import msgspec\n")
    (tmp_path / "projections" / "fold.py").write_text("def f():\n    from workers.jobs import job\n")
    (tmp_path / "ingest" / "hook.py").write_text("import projections.sql, schemas.kinds\n")
    (tmp_path / "workers" / "job.py").write_text("from reverie import cli\nfrom schemas import kinds\n")
    assert back_edges(tmp_path) == [
        "ingest/hook.py:1 imports projections.sql",
        "projections/fold.py:2 imports workers.jobs",
        "workers/job.py:1 imports reverie",
    ]


def test_a_family_reaching_into_another_is_found(tmp_path: pathlib.Path) -> None:
    for room in ("workers/extraction", "workers/dynamics", "workers/evidence", "workers/llm"):
        (tmp_path / room).mkdir(parents=True)
    (tmp_path / "workers" / "dynamics" / "follow.py").write_text(
        "from workers.thinking.follower import Derived\nfrom workers.extraction.derive import derive\n"
    )
    (tmp_path / "workers" / "evidence" / "failures.py").write_text(
        "from workers.thinking.reading import Reading\n"
    )
    (tmp_path / "workers" / "extraction" / "follow.py").write_text(
        "from workers.thinking.runner import run\n"
    )
    assert family_edges(tmp_path) == [
        "workers/dynamics/follow.py:2 imports workers.extraction.derive",
        "workers/evidence/failures.py:1 imports workers.thinking.reading",
        "workers/extraction/follow.py:1 imports workers.thinking.runner",
    ]
