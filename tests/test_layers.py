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
