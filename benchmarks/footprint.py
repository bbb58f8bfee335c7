"""What the stack costs a laptop: memory at rest, time to come up and go down, each command's time.

On a scratch data directory: `reverie up --detach`, timed to the moment hooks are accepted (the
server answers) and to the moment recall answers (a request on the recall socket gets a
context); then three fixture transcripts are imported and the stack left to settle (queue
empty, vectors in step); the resident memory of every process of the stack, and the total;
each command's wall time (`status`, `why`, `recall`, `reflect`), by the operating system's
accounting (`/usr/bin/time`), median of --runs; `reverie down`, timed, and whether any process
of the stack is left. Prints one JSON line. Memory is given as each process's RSS and their sum
(which counts the libraries every process maps, DuckDB's and Arrow's, once per process), and as
the sum of their PSS (each shared page counted once): what the stack takes from the machine.

    python benchmarks/footprint.py [--runs 5]

This script imports none of reverie's heavy parts: every number is a process of its own.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRANSCRIPTS = HERE.parent.parent / "shared" / "fixtures" / "claude-code" / "transcripts"
IMPORTED = ["short.jsonl", "tool_heavy.jsonl", "subagent.jsonl"]
REVERIE = str(Path(sys.executable).parent / "reverie")


def wait_for(what: str, check: Callable[[], object], timeout_s: float, every: float = 0.02) -> float:
    """Seconds until `check()` is truthy."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout_s:
            raise SystemExit(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(every)
    return time.monotonic() - start


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """A command's wall time by /usr/bin/time, and its stdout."""
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%e", *command], env=env, capture_output=True, text=True, timeout=300
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command} failed ({done.returncode}): {done.stderr[-2000:]}")
    return float(done.stderr.strip().splitlines()[-1]), done.stdout


def redis_answers(home: str) -> bool:
    return _ask_unix(_socket_path(home, "redis.sock"), b"*1\r\n$4\r\nPING\r\n").startswith(b"+PONG")


def recall_answers(home: str) -> bool:
    request = json.dumps({"prompt": "how do we run the tests?", "hook": "UserPromptSubmit"})
    reply = _ask_unix(_socket_path(home, "recall.sock"), request.encode() + b"\n")
    return reply.startswith(b"{") and b'"error"' not in reply


def _socket_path(home: str, name: str) -> str:
    found = list(Path(home).rglob(name))
    return str(found[0]) if found else ""


def _ask_unix(path: str, request: bytes) -> bytes:
    if not path:
        return b""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(path)
            sock.sendall(request)
            return sock.recv(65536)
    except OSError:
        return b""


def stack_pid(home: str) -> int:
    text = (Path(home) / "run" / "reverie.pid").read_text().strip()
    return int(text)


def descendants(root: int) -> dict[int, int]:
    """Every live process under `root` (and root), each with its parent."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found = {root: parents.get(root, 0)} if root in parents else {}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found[pid] = parent
                grew = True
    return found


def alive(pid: int) -> bool:
    """Whether `pid` still runs: ended but not yet reaped by whoever adopted it (a zombie) is not."""
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def resident(pid: int) -> tuple[str, int, int]:
    """A process's name (its reverie command), its resident memory (RSS) and its proportional
    share of it (PSS: pages shared with other processes, as the libraries they all load, counted
    once across them), in bytes."""
    proc = Path("/proc") / str(pid)
    args = (proc / "cmdline").read_bytes().split(b"\0")
    words = [a.decode(errors="replace") for a in args if a]
    if "reverie" in words:
        name = words[words.index("reverie") + 1]
    else:  # the embedded server, titled by its socket
        name = "server" if "server" in Path(words[0]).name else Path(words[0]).name
    sizes = {}
    for line in (proc / "smaps_rollup").read_text().splitlines():
        field, _, value = line.partition(":")
        if field in ("Rss", "Pss"):
            sizes[field] = int(value.split()[0]) * 1024
    return name, sizes["Rss"], sizes["Pss"]


def _name(pid: int) -> str:
    try:
        return resident(pid)[0]
    except (OSError, ValueError, KeyError):
        return "?"


def footprint(root: int) -> dict[str, tuple[int, int]]:
    """RSS and PSS of each process of the tree under `root`, by name."""
    sizes: dict[str, tuple[int, int]] = {}
    tree = descendants(root)
    for pid, parent in sorted(tree.items()):
        try:
            name, rss, pss = resident(pid)
        except (OSError, ValueError, KeyError):
            continue
        if parent in tree and parent != root and name != "server":
            name += " (child)"
        old = sizes.get(name, (0, 0))
        sizes[name] = (old[0] + rss, old[1] + pss)
    return sizes


def settled(env: dict[str, str]) -> bool:
    done = subprocess.run([REVERIE, "status", "--json"], env=env, capture_output=True, text=True, timeout=60)
    state = json.loads(done.stdout)
    busy = [w for w in state["workers"] if w["state"] == "busy"]
    return not state["lag"] and not state["pending"] and not busy and state["vectors_published_at"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (median)")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="reverie-footprint-")
    env = {**os.environ, "REVERIE_HOME": home, "HF_HUB_OFFLINE": "1"}
    env.pop("REDIS_URL", None)
    result: dict[str, object] = {}

    start = time.monotonic()
    subprocess.run([REVERIE, "up", "--detach"], env=env, check=True, capture_output=True, timeout=120)
    result["up_returned_s"] = round(time.monotonic() - start, 2)
    result["up_to_hooks_accepted_s"] = round(
        time.monotonic() - start + wait_for("the server", lambda: redis_answers(home), 120), 2
    )
    result["up_to_recall_answers_s"] = round(
        time.monotonic() - start + wait_for("recall", lambda: recall_answers(home), 120), 2
    )
    pid = stack_pid(home)
    try:
        paths = [str(TRANSCRIPTS / name) for name in IMPORTED]
        subprocess.run([REVERIE, "import", *paths], env=env, check=True, capture_output=True, timeout=300)
        wait_for("the stack to settle", lambda: settled(env), 600, every=1.0)
        time.sleep(5)  # idle, as a laptop's stack is most of the day
        sizes = footprint(pid)
        result["rss_mb"] = {name: round(rss / 2**20) for name, (rss, _) in sorted(sizes.items())}
        result["rss_total_mb"] = round(sum(rss for rss, _ in sizes.values()) / 2**20)
        result["pss_total_mb"] = round(sum(pss for _, pss in sizes.values()) / 2**20)
        fact = subprocess.run(
            [REVERIE, "sql", "--json", "select fact_id from facts limit 1"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        fact_id = json.loads(fact.stdout.splitlines()[0])["fact_id"] if fact.stdout.strip() else "fact:0"
        commands = {
            "status": [REVERIE, "status"],
            "why": [REVERIE, "why", fact_id],
            "recall": [REVERIE, "recall", "how do we run the tests?"],
            "reflect": [REVERIE, "reflect", "should we keep DuckDB for analytics?"],
        }
        for name, command in commands.items():
            times = [timed(command, env)[0] for _ in range(args.runs)]
            result[f"{name}_s"] = statistics.median(times)
    finally:
        tree = descendants(pid)
        names = {p: _name(p) for p in tree}
        start = time.monotonic()
        subprocess.run([REVERIE, "down"], env=env, capture_output=True, timeout=120)
        result["down_s"] = round(time.monotonic() - start, 2)
        left = [p for p in tree if alive(p)]
        result["left_behind"] = len(left)
        if left:
            result["left_behind_names"] = sorted(names[p] for p in left)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
