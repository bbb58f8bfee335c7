"""The `reverie` command: parses, then calls into the rooms.

`reverie hook` is checked before anything else is imported: it runs once per Claude Code
event and its whole budget is a few tens of milliseconds. `reverie mcp` too: a session waits
for it to start. Every other command is parsed by
reverie/cli/parser.py, which assembles the commands of each group (one module a group: the stack,
the event log, memory, thinking, Claude Code, the Procfile's processes) and calls the function
the command names; each imports what it needs when it runs, never at parse time.

A command whose output's reader leaves early (`reverie sql ... | head`) ends quietly, with
the status a shell expects of a writer cut off.

Every reverie process, and every process it starts, creates its files and folders for this
user alone (umask 077): prompts, tool output and memories are nobody else's to read, whichever
process happens to create a folder first.
"""

import os
import sys


def main(argv: list[str] | None = None) -> int:
    os.umask(0o077)
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"]:
        from ingest.hook import main as hook_main

        return hook_main(args[1:])
    if args == ["mcp"]:  # what Claude Code starts for each session: no parser, no console
        from reverie.mcp_stdio import serve

        return serve()
    from reverie.cli.parser import run

    try:
        status = run(args)
        sys.stdout.flush()  # here, where a reader gone is caught, not at the interpreter's exit
    except BrokenPipeError:
        return _reader_gone()
    return status


def _reader_gone() -> int:
    """stdout's reader left (`reverie sql ... | head`): end quietly, with the status a shell
    gives a writer SIGPIPE ended, 128 + 13 (which `set -o pipefail` reports as such)."""
    import signal

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # what is still buffered goes nowhere, without a word
    return 128 + signal.SIGPIPE
