"""The shape of the code: how large its modules and functions are, one JSON line.

    python benchmarks/code_shape.py

Counts the source below ingest/, projections/, reverie/, schemas/ and workers/ (tests and
benchmarks apart): each module's lines, each function's lines (a method is a function; a nested
function counts inside its parent, not again), as medians, 90th percentiles and maxima, with the
functions over 50 and over 80 lines named.
"""

import ast
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLOORS = ("schemas", "ingest", "projections", "workers", "reverie")


def functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The outermost functions and methods of `tree`."""
    found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(node)
        elif isinstance(node, ast.ClassDef):
            found += functions(node)
    return found


def spread(sizes: list[int]) -> dict[str, float]:
    ordered = sorted(sizes)
    return {
        "median": statistics.median(ordered),
        "p90": ordered[int(0.9 * (len(ordered) - 1))],
        "max": ordered[-1],
    }


def main() -> None:
    modules: dict[str, int] = {}
    sized: dict[str, int] = {}
    for floor in FLOORS:
        for path in sorted((ROOT / floor).rglob("*.py")):
            source = path.read_text()
            name = str(path.relative_to(ROOT))
            modules[name] = len(source.splitlines())
            for fn in functions(ast.parse(source)):
                sized[f"{name}:{fn.name}"] = (fn.end_lineno or fn.lineno) - fn.lineno + 1
    over = {limit: sorted(k for k, n in sized.items() if n > limit) for limit in (50, 80)}
    print(
        json.dumps(
            {
                "benchmark": "code_shape",
                "modules": len(modules),
                "module_lines": spread(list(modules.values())),
                "largest_modules": sorted(modules, key=modules.__getitem__, reverse=True)[:5],
                "functions": len(sized),
                "function_lines": spread(list(sized.values())),
                "functions_over_50": len(over[50]),
                "functions_over_80": over[80],
            }
        )
    )


if __name__ == "__main__":
    main()
