"""How Claude Code reaches reverie: `reverie hook`, `install` and `uninstall`, `claude-code`
(the plugin's folders) and `mcp`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from schemas.kinds import HOOK_KINDS

if TYPE_CHECKING:
    from reverie.cli.parser import Commands

INSTALL_HELP = """\
Merges one hook entry per Claude Code event into the scope's settings.json (your own hooks and
keys stay as they are) and registers reverie's MCP server where Claude Code reads it, as `claude
mcp add --scope` would: the running stack's, over HTTP, if one runs (the user and local scopes),
else `reverie mcp` on stdio. Installing again replaces reverie's entries, never doubles
them; only their text changes in each file, whose formatting stays. Each file's bytes from
before are kept beside it (*.reverie-backup) for `reverie uninstall claude-code`. REVERIE_HOME
and REDIS_URL, when set, go into the entries. The project scopes take the project of the
current folder (the root of its git worktree). The project scope's files are shared through
git: they name no path of this machine, and run `reverie hook` and `reverie mcp` from each
user's PATH (a teammate without reverie records nothing and is never blocked).

Claude Code deletes its transcripts (~/.claude/projects) older than cleanupPeriodDays days
(default 30) each time it starts. Install says how many it still holds and how long it keeps
them; with --keep-transcripts DAYS, or your yes when it asks on a terminal (it never asks
elsewhere), it raises cleanupPeriodDays in ~/.claude/settings.json (never lowers it; uninstall
puts back the value from before, unless you changed it since). Then, if the stack runs, it
imports them in the background (`reverie status` shows how far); else it says how to, later.
"""
UNINSTALL_HELP = """\
Puts back each file install changed, byte for byte, if nobody changed it since; otherwise takes
reverie's entries out and leaves everything else as it is.
"""
PLUGIN_HELP = """\
Without `reverie install`, Claude Code can take reverie as a plugin: run
  claude plugin marketplace add $(reverie claude-code marketplace)
  claude plugin install reverie@reverie
The install shows the command Claude Code runs to get the plugin and asks to run it
(outside a terminal, add --yes). The plugin holds the hooks, the MCP server and the
/reverie:remember and /reverie:recall commands; Claude Code asks `reverie claude-code
plugin` for it again at each update and session, so it always points at the reverie
installed now."""


def add_hook(commands: Commands) -> None:
    """`reverie hook`: listed here for its help; `reverie` runs it before parsing anything
    (reverie/cli/__init__.py)."""
    hook = commands.add_parser(
        "hook",
        help="record one Claude Code hook event read from stdin (always exits 0, prints nothing)",
        description="Reads one hook payload (JSON) on stdin and appends it to the stream, or to the local "
        "spool if Redis cannot take it in time. Unreadable input becomes a dead letter. Never fails.",
    )
    hook.add_argument(
        "event", nargs="?", help=f"hook event name (default: hook_event_name): {', '.join(HOOK_KINDS)}"
    )
    hook.set_defaults(func=_hook)


def _hook(args: argparse.Namespace) -> int:
    from ingest.hook import main as hook_main

    return hook_main([] if args.event is None else [args.event])


def add_install(commands: Commands) -> None:
    _add_installer(commands, "install", "install", INSTALL_HELP)


def add_uninstall(commands: Commands) -> None:
    _add_installer(commands, "uninstall", "take out", UNINSTALL_HELP)


def _add_installer(commands: Commands, verb: str, does: str, description: str) -> None:
    command = commands.add_parser(
        verb,
        help=f"{does} reverie's Claude Code hooks and MCP server",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument("agent", choices=["claude-code"], help="the coding agent")
    command.add_argument(
        "--scope",
        choices=["user", "project", "local"],
        default="user",
        help="user: ~/.claude/settings.json and ~/.claude.json (default); project: the project's "
        ".claude/settings.json and .mcp.json, shared through git; local: .claude/settings.local.json "
        "and this project's entry in ~/.claude.json, yours alone",
    )
    command.add_argument("--dry-run", action="store_true", help="print what would change, as a diff")
    if verb == "install":
        command.add_argument(
            "--keep-transcripts",
            type=_days,
            metavar="DAYS",
            help="have Claude Code keep its transcripts DAYS days at least (cleanupPeriodDays)",
        )
        command.add_argument(
            "--no-import",
            action="store_true",
            help="do not import Claude Code's transcripts in the background",
        )
    command.set_defaults(func=_install if verb == "install" else _uninstall)


def _days(text: str) -> int:
    try:
        days = int(text)
    except ValueError:
        days = 0
    if days < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of days, 1 or more")
    return days


def _install(args: argparse.Namespace) -> int:
    from reverie.installing.command import install

    return install(args.scope, args.dry_run, args.keep_transcripts, import_history=not args.no_import)


def _uninstall(args: argparse.Namespace) -> int:
    from reverie.installing.command import uninstall

    return uninstall(args.scope, args.dry_run)


def add_claude_code(commands: Commands) -> None:
    claude_code = commands.add_parser(
        "claude-code",
        help="reverie as a Claude Code plugin: its marketplace and plugin folders",
        description=PLUGIN_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    folder = claude_code.add_subparsers(dest="folder", metavar="FOLDER", required=True)
    marketplace = folder.add_parser("marketplace", help="write the marketplace folder and print its path")
    marketplace.set_defaults(func=_marketplace)
    plugin = folder.add_parser(
        "plugin", help="write the plugin folder and print its path (the marketplace runs this)"
    )
    plugin.set_defaults(func=_plugin)


def _marketplace(args: argparse.Namespace) -> int:
    from reverie import marketplace

    return marketplace.marketplace_command()


def _plugin(args: argparse.Namespace) -> int:
    from reverie import marketplace

    return marketplace.plugin_command()


def add_mcp(commands: Commands) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="the MCP server: on stdio for the session that starts it, or over HTTP for the stack",
        description="Serves reverie's memory tools over MCP: memory_recall, memory_remember, "
        "memory_reflect, memory_timeline, memory_forget, memory_why. On stdin and stdout (the "
        "default), for the project of the folder it starts in; it asks the warm recall service, and "
        "with the stack down a recall loads the model once. With --http, the stack's server (`reverie "
        "up` runs it): Streamable HTTP on loopback, for every project, each request naming its own, "
        "behind the token kept in $REVERIE_HOME/mcp.json. `reverie install claude-code` registers the "
        "HTTP one when the stack runs, else the stdio one.",
    )
    mcp.add_argument("--http", action="store_true", help="serve over Streamable HTTP (the stack's)")
    mcp.set_defaults(func=_mcp)


def _mcp(args: argparse.Namespace) -> int:
    if args.http:
        from reverie import mcp_http

        return mcp_http.serve()
    from reverie import mcp_stdio

    return mcp_stdio.serve()
