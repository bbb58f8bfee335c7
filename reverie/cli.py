"""The `reverie` command: parses, then calls into the rooms.

`reverie hook` is checked before anything else is imported: it runs once per Claude Code
event and its whole budget is a few tens of milliseconds.

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
    from reverie.commands import run

    return run(args)
