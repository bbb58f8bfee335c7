"""The hook as whole processes, beside the bare interpreter, in one run.

Starts an embedded server in a scratch REVERIE_HOME, then runs, interleaved: `python -c pass`;
the command `reverie install claude-code` writes for PostToolUse, through `/bin/sh -c` as
Claude Code runs it, with a typical payload (stream path); the same with Redis unreachable
(spool path); and `reverie hook PostToolUse` through the console script, as the README once
had users write it. Each run is timed by the operating system's accounting (wait4: the CPU
time of the process and what it waited for) and by the wall clock around it. Prints one JSON
line: medians, p95 and p99 in milliseconds, and the installed hook's ratio to the bare
interpreter (of the medians, and the median of the ratios of interleaved pairs).

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

from ingest.envelope import compile_patterns
from reverie.installing.entries import launcher_command

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


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system, as the kernel accounts them) milliseconds of one run."""
    with tempfile.TemporaryFile() as feed:
        feed.write(stdin)
        feed.seek(0)
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdin=feed, env=env, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = (time.perf_counter() - start) * 1000
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.returncode == 0, argv
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


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
    compile_patterns()  # as `reverie install claude-code` does
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
        installed = ["/bin/sh", "-c", launcher_command("PostToolUse", {})]
        cases = {
            "bare": ([sys.executable, "-c", "pass"], b"", env),
            "installed": (installed, payload, env),
            "installed_redis_down": (installed, payload, down_env),
            "console_script": ([reverie, "hook", "PostToolUse"], payload, env),
        }
        for argv, stdin, case_env in cases.values():  # warm the page cache
            timed(argv, stdin, case_env)
        walls: dict[str, list[float]] = {name: [] for name in cases}
        cpus: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (argv, stdin, case_env) in cases.items():
                wall, cpu = timed(argv, stdin, case_env)
                walls[name].append(wall)
                cpus[name].append(cpu)
        spooled = len(os.listdir(os.path.join(home, "spool")))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(home, ignore_errors=True)
    result: dict[str, object] = {
        "benchmark": "hook_latency",
        "runs": args.runs,
        "payload_bytes": len(payload),
        "bytecode": "compiled",
    }
    for measure, of_case in (("wall", walls), ("cpu", cpus)):
        for name, values in of_case.items():
            result[f"{name}_{measure}_p50_ms"] = round(statistics.median(values), 1)
            result[f"{name}_{measure}_p95_ms"] = round(percentile(values, 0.95), 1)
            result[f"{name}_{measure}_p99_ms"] = round(percentile(values, 0.99), 1)
        hooks, bares = of_case["installed"], of_case["bare"]
        pairs = [hook / bare for hook, bare in zip(hooks, bares, strict=True)]
        result[f"installed_over_bare_{measure}_p50"] = round(
            statistics.median(hooks) / statistics.median(bares), 2
        )
        result[f"installed_over_bare_{measure}_pairs_median"] = round(statistics.median(pairs), 2)
    result["spooled_when_down"] = spooled
    print(json.dumps(result))


if __name__ == "__main__":
    main()
