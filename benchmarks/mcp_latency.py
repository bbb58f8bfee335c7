"""`reverie mcp` from spawn to `initialize` answered and to the first tool result, through the MCP
SDK's own stdio client: cold (no stack: the first recall loads the model in the server) and warm
(a stack running: the server asks the warm recall service). Medians of --runs sessions each.
Prints one JSON line, in milliseconds.

    python benchmarks/mcp_latency.py [--runs 5]
"""

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from schemas.settings import Settings

QUERY = {"query": "which database does the orders service use"}


async def one_session(env: dict[str, str], cwd: str) -> tuple[float, float]:
    """Milliseconds from spawn to `initialize` answered, and to the first memory_recall result."""
    server = StdioServerParameters(command=sys.executable, args=["-m", "reverie", "mcp"], env=env, cwd=cwd)
    start = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        async with stdio_client(server, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            initialized = time.perf_counter()
            result = await session.call_tool("memory_recall", QUERY)
            answered = time.perf_counter()
    assert not result.is_error, result.content
    return (initialized - start) * 1000, (answered - start) * 1000


def measure(env: dict[str, str], cwd: str, runs: int) -> dict[str, float]:
    sessions = [asyncio.run(one_session(env, cwd)) for _ in range(runs)]
    return {
        "initialize_p50_ms": round(statistics.median(s[0] for s in sessions), 1),
        "first_tool_result_p50_ms": round(statistics.median(s[1] for s in sessions), 1),
    }


def wait_for_service(home: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(Settings(home).recall_socket_path):
        if time.monotonic() > deadline:
            raise TimeoutError("the recall service did not start")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="rv-mcp-")
    project = tempfile.mkdtemp(prefix="rv-mcp-project-")
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | {"REVERIE_HOME": home}
    reverie = [sys.executable, "-m", "reverie"]
    try:
        cold = measure(env, project, args.runs)
        subprocess.run([*reverie, "up", "--detach"], env=env, check=True, capture_output=True)
        wait_for_service(home)
        subprocess.run(
            [*reverie, "remember", "The orders service runs on PostgreSQL 16"],
            env=env,
            cwd=project,
            check=True,
        )
        warm = measure(env, project, args.runs)
    finally:
        subprocess.run([*reverie, "down"], env=env, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(project, ignore_errors=True)
    result = {"benchmark": "mcp_latency", "runs": args.runs}
    result |= {f"cold_{k}": v for k, v in cold.items()} | {f"warm_{k}": v for k, v in warm.items()}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
