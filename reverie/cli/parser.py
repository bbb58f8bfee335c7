"""The parser of `reverie`: the commands of every group, assembled in the order `reverie --help`
lists them, each calling the function its group names for it (`func`).

Parsing imports only what the commands' choices and help name (schemas, the tables of
projections/folds/, and the scheduled thinking workers of workers/thinking/registry.py); what a
command does is imported when it runs.
"""

import argparse
from collections.abc import Callable
from typing import TypeAlias

from reverie.cli import (
    claude_code,
    dashboard,
    event_log,
    exporting,
    friction,
    memory,
    processes,
    stack,
    thinking,
)

# What each group adds its commands to.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

DESCRIPTION = """\
Long-term memory for AI coding agents. Claude Code hooks record every prompt, tool use and
outcome as an immutable event; background workers archive them and learn from them: facts,
episodes, preferences that crystallize, what fades and what a dream cycle consolidates; every
new prompt gets the memories that matter. Data lives in $REVERIE_HOME (default:
$XDG_DATA_HOME/reverie or ~/.local/share/reverie). With REDIS_URL unset, reverie runs its own
embedded server there; set REDIS_URL to share one.

Start here:
  reverie up --detach            start the stack in the background
  reverie import                 backfill from ~/.claude/projects
  reverie sql "select kind, count(*) from events group by kind"
  reverie recall "how do we run the tests?"
  reverie reflect "should we keep DuckDB for analytics?"
  reverie dashboard --open       see memory in a browser
"""

# Each adds one command (its arguments, its help, and the function it calls), in this order.
COMMANDS: tuple[Callable[[Commands], None], ...] = (
    claude_code.add_hook,
    stack.add_up,
    stack.add_down,
    stack.add_status,
    dashboard.add_dashboard,
    event_log.add_import,
    event_log.add_sql,
    event_log.add_replay,
    event_log.add_embed,
    exporting.add_export,
    exporting.add_import_json,
    memory.add_recall,
    memory.add_why,
    claude_code.add_install,
    claude_code.add_uninstall,
    memory.add_remember,
    memory.add_forget,
    memory.add_curate,
    memory.add_stash,
    claude_code.add_claude_code,
    claude_code.add_mcp,
    processes.add_serve,
    processes.add_server,
    processes.add_dispatch,
    processes.add_project,
    thinking.add_reflect,
    friction.add_friction,
    processes.add_worker,
    processes.add_scheduler,
    thinking.add_think,
)


def parser() -> argparse.ArgumentParser:
    """`reverie`'s parser: every command of COMMANDS."""
    top = argparse.ArgumentParser(
        prog="reverie", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in COMMANDS:
        add(commands)
    return top


# Options whose value may start with "-": Claude Code's project keys do (-home-u-app).
_DASHED_VALUES = ("--project",)


def attach_dashed_values(argv: list[str]) -> list[str]:
    """`--project -home-u-app` as `--project=-home-u-app`, which argparse reads as a value
    (it takes a word starting with "-" after an option for another option)."""
    joined: list[str] = []
    for arg in argv:
        if joined and joined[-1] in _DASHED_VALUES and arg.startswith("-") and not arg.startswith("--"):
            joined[-1] = f"{joined[-1]}={arg}"
        else:
            joined.append(arg)
    return joined


def run(argv: list[str]) -> int:
    """Parse `argv` (what follows `reverie`) and run the command it names; its exit status."""
    if argv[:1] != ["hook"]:  # the hook parses its own arguments
        argv = attach_dashed_values(argv)
    args = parser().parse_args(argv)
    if (missing := _no_memory(args)) is not None:
        from reverie.console import fail

        return fail(missing)
    status: int = args.func(args)
    return status


def _no_memory(args: argparse.Namespace) -> str | None:
    """Why a command that only reads memory has nothing to read: no data directory (which it
    would otherwise make, or read as empty); None when it may run. Such a command sets `reads`:
    "here" (this machine's files), or "served" (a recall service, which may answer from
    elsewhere, REVERIE_RECALL_URL, for a machine that holds no data directory)."""
    reads = getattr(args, "reads", None)
    if reads is None:
        return None
    from reverie.recalling import no_memory_yet
    from schemas.settings import Settings

    settings = Settings.from_env()
    if reads == "served" and settings.recall_url:
        return None
    return no_memory_yet(settings)
