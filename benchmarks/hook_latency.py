"""Wall time of the whole `reverie hook` process, beside the bare interpreter, in one run.

Starts an embedded server in a scratch REVERIE_HOME, then times, interleaved, `python -c pass`,
`reverie hook PostToolUse` with a typical payload (stream path) and the same hook with Redis
unreachable (spool path). Prints one JSON line: medians, p95 and p99 in milliseconds.

    python benchmarks/hook_latency.py [--runs 100]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PAYLOAD = os.path.join(
    HERE, "..", "..", "shared", "fixtures", "claude-code", "hook-payloads", "v1.0.70", "post_tool_use.json"
)


def typical_payload() -> bytes:
    """The median-sized PostToolUse payload of the real captures."""
    with open(PAYLOAD) as f:
        payloads = json.load(f)
    payloads.sort(key=lambda p: len(json.dumps(p)))
    return json.dumps(payloads[len(payloads) // 2]).encode()


def compile_bytecode() -> None:
    """Compile the hook's modules, as `pip install` does for a regular install.

    An editable install leaves that to the first run, and these machines set
    PYTHONDONTWRITEBYTECODE, which would make every hook compile its modules again.
    """
    code = (
        "import compileall, importlib.util, os\n"
        "for name in ('schemas', 'ingest', 'reverie'):\n"
        "    compileall.compile_dir(os.path.dirname(importlib.util.find_spec(name).origin), quiet=1)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    reverie = shutil.which("reverie", path=os.path.dirname(sys.executable))
    assert reverie, "reverie is not installed beside this python"
    compile_bytecode()
    home = tempfile.mkdtemp(prefix="rv-bench-")
    env = {**os.environ, "REVERIE_HOME": home}
    env.pop("REDIS_URL", None)
    down_env = {**env, "REDIS_URL": f"unix://{home}/nobody-listens.sock"}
    server = subprocess.Popen([reverie, "server"], env=env, stdout=subprocess.DEVNULL)
    try:
        socket_path = os.path.join(home, "redis.sock")
        deadline = time.monotonic() + 15
        while not os.path.exists(socket_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        payload = typical_payload()
        cases = {
            "bare": ([sys.executable, "-c", "pass"], b"", env),
            "hook": ([reverie, "hook", "PostToolUse"], payload, env),
            "hook_redis_down": ([reverie, "hook", "PostToolUse"], payload, down_env),
        }
        for argv, stdin, case_env in cases.values():  # warm the page cache
            timed(argv, stdin, case_env)
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (argv, stdin, case_env) in cases.items():
                times[name].append(timed(argv, stdin, case_env))
        spooled = len(os.listdir(os.path.join(home, "spool")))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(home, ignore_errors=True)
    result = {
        "benchmark": "hook_latency",
        "runs": args.runs,
        "payload_bytes": len(payload),
        "bytecode": "compiled",
    }
    for name, values in times.items():
        result[f"{name}_p50_ms"] = round(statistics.median(values), 1)
        result[f"{name}_p95_ms"] = round(percentile(values, 0.95), 1)
        result[f"{name}_p99_ms"] = round(percentile(values, 0.99), 1)
    result["hook_p50_over_bare"] = round(result["hook_p50_ms"] / result["bare_p50_ms"], 2)
    result["spooled_when_down"] = spooled
    print(json.dumps(result))


if __name__ == "__main__":
    main()
