"""The subcommands of `reverie` (all but `hook`): their arguments and help."""

import argparse
import os
import typing

from projections.folds import TABLES
from schemas.categories import CATEGORIES
from schemas.kinds import HOOK_KINDS
from schemas.memory import Category
from schemas.registry import MEMORY_TABLES
from workers.thinking.registry import scheduled

FACT_CATEGORIES: tuple[str, ...] = typing.get_args(Category)
_TABLES = "; ".join(f"{family}: {', '.join(tables)}" for family, tables in TABLES.items())

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
"""


INSTALL_HELP = """\
Merges one hook entry per Claude Code event into the scope's settings.json (your own hooks and
keys stay as they are) and registers the MCP server `reverie mcp` where Claude Code reads it,
as `claude mcp add --scope` would. Installing again replaces reverie's entries, never doubles
them. Each file's bytes from before are kept beside it (*.reverie-backup) for
`reverie uninstall claude-code`. REVERIE_HOME and REDIS_URL, when set, go into the entries.
The project scopes take the project of the current folder (the root of its git worktree).
"""
UNINSTALL_HELP = """\
Puts back each file install changed, byte for byte, if nobody changed it since; otherwise takes
reverie's entries out and leaves everything else as it is.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reverie", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    hook = sub.add_parser(
        "hook",
        help="record one Claude Code hook event read from stdin (always exits 0, prints nothing)",
        description="Reads one hook payload (JSON) on stdin and appends it to the stream, or to the local "
        "spool if Redis cannot take it in time. Unreadable input becomes a dead letter. Never fails.",
    )
    hook.add_argument(
        "event", nargs="?", help=f"hook event name (default: hook_event_name): {', '.join(HOOK_KINDS)}"
    )

    up = sub.add_parser("up", help="start the stack: embedded server, dispatcher, workers (Ctrl-C stops it)")
    up.add_argument(
        "--detach", "-d", action="store_true", help="run in the background; stop with `reverie down`"
    )
    up.add_argument("--workers", type=int, default=1, metavar="N", help="RQ worker processes (default: 1)")

    sub.add_parser("down", help="stop a stack started with `reverie up --detach`")

    status = sub.add_parser(
        "status",
        help="stream length, pending entries, lag, spool, dead letters, quarantined segments, workers",
    )
    status.add_argument("--json", action="store_true", help="print one JSON object")

    imp = sub.add_parser(
        "import",
        help="backfill events from Claude Code transcripts (idempotent)",
        description="Reads Claude Code transcripts (*.jsonl, subagents included), turns each into the events "
        "its hooks would have recorded, and sends the ones not yet in the log to the running stack. "
        "Importing the same files again adds nothing.",
    )
    imp.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        default=[os.path.join("~", ".claude", "projects")],
        help="transcript files or folders (default: ~/.claude/projects)",
    )
    imp.add_argument("--no-wait", action="store_true", help="do not wait for the dispatcher to archive them")

    sql = sub.add_parser(
        "sql",
        help="run DuckDB SQL over the event log and the projections",
        description="The event log: events(id, kind, ts, recorded_at, project, session_id, agent, source, v, "
        "payload JSON, caused_by), dead_letters(id, recorded_at, stage, reason, head, size, argv). "
        f"Tables, by the family of folds that fills them (projections/folds/): {_TABLES} "
        "(project_roots: each identified root path's project). Analytics: facts_current, "
        "facts_as_of(valid_time, known_time) (bi-temporal: true at valid_time, as known at known_time), "
        "tool_usage_per_day, entity_timeline, memory_health, related_projects (HORA's: shared dependencies "
        f"and entities); memory_texts (every memory recall shows: {', '.join(MEMORY_TABLES)}), "
        "memory_documents (what the embedder embeds), associations "
        "(Hebbian, between entities recalled together) and "
        "embedded (what the vectors hold, by memory_id and content_hash). The projections are the "
        "projector's last published snapshot. Give - to read the query from stdin. Queries only read: "
        "SELECT (DESCRIBE, SHOW, SUMMARIZE) and EXPLAIN of one run; COPY, EXPORT, ATTACH, CREATE, SET... "
        'are refused. To keep results, redirect them: reverie sql --csv "SELECT ..." > out.csv (or --json).',
    )
    sql.add_argument(
        "query", nargs="?", help="the SQL query, or - for stdin (none: an interactive shell on a terminal)"
    )
    fmt = sql.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object per row")
    fmt.add_argument("--csv", action="store_true", help="CSV with a header row")

    sub.add_parser(
        "replay",
        help="rebuild every projection from the event log and swap it in",
        description="Folds the whole event log, in event-id order, into a fresh store, then swaps it in "
        "atomically (a running projector follows). No thinking worker runs again: derived events are in "
        "the log. A running projector does this by itself when its store cannot be read.",
    )
    recall = sub.add_parser(
        "recall",
        help="ask memory: the memories that matter for QUERY, best first",
        description="Runs recall as the hooks do: task classification, 3 to 5 queries, four retrievers "
        "(semantic, full text, graph, temporal) whose candidates are scored on every component (the model "
        "on the memory and on the turns around it, BM25 on the memory and on its session, the graph), "
        "fused by the sum of z-scores (or --fusion rrf), then weighed by ACT-R activation, FSRS "
        "retrievability, recency and confidence. Asks the warm service (`reverie serve`, run by "
        "`reverie up`) if it runs, else loads the model here (seconds).",
    )
    recall.add_argument("query", help="what to remember about")
    recall.add_argument("--limit", type=int, default=10, help="how many memories (default: 10)")
    where = recall.add_mutually_exclusive_group()
    where.add_argument(
        "--project",
        help="this project's memories (and those that hold everywhere): its root folder, e.g. ~/app "
        "(default: the current folder's project, as `reverie remember` finds it)",
    )
    where.add_argument("--all-projects", action="store_true", help="the memories of every project")
    recall.add_argument(
        "--as-of",
        metavar="TIME",
        help="time travel: memory as it stood then (ISO date or time, UTC by default)",
    )
    recall.add_argument(
        "--type", choices=["world", "experience", "opinion", "observation"], help="one network"
    )
    recall.add_argument(
        "--category",
        choices=[*FACT_CATEGORIES, *CATEGORIES],
        metavar="C",
        help=f"facts of one category ({', '.join(FACT_CATEGORIES)}), or remembered memories of one of "
        f"Memory Fabric's: {', '.join(CATEGORIES)}",
    )
    _scope_flags(recall, "only remembered memories")
    recall.add_argument(
        "--fusion",
        choices=["zscore", "rrf"],
        default="zscore",
        help="how components make one score: the sum of their z-scores (default) or Reciprocal Rank Fusion",
    )
    recall.add_argument(
        "--weighting",
        choices=["cognitive", "fabric"],
        default="cognitive",
        help="relevance weighed by strength and confidence (default), or Memory Fabric's weights: "
        "recency 0.3, relevance 0.5, authority 0.2",
    )
    recall.add_argument(
        "--dedup",
        action="store_true",
        help="merge results whose words overlap above 0.85 (Jaccard); the kept one is cross-validated",
    )
    recall.add_argument("--explain", action="store_true", help="every component of each score")
    recall.add_argument("--json", action="store_true", help="the whole recall as JSON")
    why = sub.add_parser(
        "why",
        help="where a memory (a fact, an entity, an episode, one remembered...) comes from, down to "
        "the transcript's line",
        description="Shows what memory holds under ID (a fact, an entity, an episode, any memory recall "
        "shows; a prefix only it has will do), the derived events that made and changed it (asserted, "
        "reconsolidated, superseded...), the events each came from, and the transcript file and line "
        "that record those; for a memory no worker derived (`reverie remember`'s, a prompt), the event "
        "that recorded it and by whom. Reads the projections' last snapshot and the event log.",
    )
    why.add_argument("id", help="e.g. fact:9c4aa661d8, file:2b7e…, episode:…, or the id recall shows")
    why.add_argument("--json", action="store_true", help="the whole answer as one JSON object")
    for verb, does in (("install", "install"), ("uninstall", "take out")):
        command = sub.add_parser(
            verb,
            help=f"{does} reverie's Claude Code hooks and MCP server",
            description=INSTALL_HELP if verb == "install" else UNINSTALL_HELP,
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
    remember = sub.add_parser(
        "remember",
        help="remember TEXT for later sessions (a decision, a pattern, what failed...)",
        description="Records TEXT as a memory of the current folder's project, which recall then finds "
        "like any other. Its category is told from the text when --category is not given. The event goes "
        "to the stack, or to the spool while the stack is down: nothing is lost.",
    )
    remember.add_argument("text", nargs="+", help="what to remember")
    remember.add_argument("--category", choices=CATEGORIES, metavar="C", help=", ".join(CATEGORIES))
    _scope_flags(remember, "remember it as")
    forget = sub.add_parser(
        "forget",
        help="hide a memory from recall (an event: nothing is deleted)",
        description="Records that the memory ID (as `reverie recall` shows it) is to be forgotten: "
        'recall no longer returns it; `reverie sql "select * from forgotten"` lists what was. An id no '
        "memory of this project has is refused (exit status 1).",
    )
    forget.add_argument("id", help="the memory's id")
    forget.add_argument("--reason", default="", help="why (kept with the event)")
    claude_code = sub.add_parser(
        "claude-code",
        help="reverie as a Claude Code plugin: its marketplace and plugin folders",
        description="Without `reverie install`, Claude Code can take reverie as a plugin: run\n"
        "  claude plugin marketplace add $(reverie claude-code marketplace)\n"
        "  claude plugin install reverie@reverie\n"
        "The install shows the command Claude Code runs to get the plugin and asks to run it\n"
        "(outside a terminal, add --yes). The plugin holds the hooks, the MCP server and the\n"
        "/reverie:remember and /reverie:recall commands; Claude Code asks `reverie claude-code\n"
        "plugin` for it again at each update and session, so it always points at the reverie\n"
        "installed now.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    folder = claude_code.add_subparsers(dest="folder", metavar="FOLDER", required=True)
    folder.add_parser("marketplace", help="write the marketplace folder and print its path")
    folder.add_parser("plugin", help="write the plugin folder and print its path (the marketplace runs this)")
    sub.add_parser(
        "mcp",
        help="the MCP server Claude Code starts (stdio): recall, remember, reflect, timeline, forget, why",
        description="Serves reverie's memory tools over MCP on stdin and stdout, for the project of the "
        "folder it starts in: memory_recall, memory_remember, memory_reflect, memory_timeline, "
        "memory_forget, memory_why. `reverie install claude-code` registers it. It asks the warm recall "
        "service; with the stack down, a recall loads the model once.",
    )
    sub.add_parser("serve", help="(Procfile) run the warm recall service on a unix socket")
    sub.add_parser("server", help="(Procfile) run the embedded Redis-compatible server in the foreground")
    dispatch = sub.add_parser("dispatch", help="(Procfile) run the dispatcher: stream -> event log")
    dispatch.add_argument("--name", help="consumer name in the group (default: this host's name)")
    sub.add_parser("project", help="(Procfile) run the projector: event log -> DuckDB tables")
    embed = sub.add_parser(
        "embed",
        help="(Procfile) run the embedder: memory texts -> LanceDB vectors",
        description="Loads the embedding model once ($REVERIE_EMBEDDING_MODEL, default all-MiniLM-L6-v2, "
        "offline), then keeps the vectors in step with each snapshot the projector publishes: memories are "
        "chunked, embedded (or taken from the cache of embeddings by content and model) and written to "
        "LanceDB, which the recall service follows. `reverie up` runs one.",
    )
    embed.add_argument(
        "--once",
        action="store_true",
        help="sync with the last published snapshot, with a progress bar, then exit",
    )
    reflect = sub.add_parser(
        "reflect",
        help="form an opinion on QUERY from what memory holds, with the evidence for and against",
        description="Recalls what memory holds on QUERY in this project, then weighs it: each memory "
        "supports or contradicts, weighted by how well it matches, how strong, recent and confident it "
        "is. The project's disposition shapes it: `.reverie.toml` at its root, table [reflect]: "
        "skepticism, literalism, empathy (1 to 5, default 3) and background (text). With extraction's "
        "LLM configured (settings.toml [llm]), the model words and weighs the same evidence, within its "
        "daily budget. The opinion is recorded (opinion.formed, then opinion.revised as evidence "
        "changes); above 0.9 it is flagged for CLAUDE.md's memory section.",
    )
    reflect.add_argument("query", nargs="+", help="the question, e.g. should we keep using DuckDB")
    reflect.add_argument("--project", help="the project's root folder (default: the current folder's)")
    reflect.add_argument("--json", action="store_true", help="print the opinion and its evidence as JSON")
    sub.add_parser("worker", help="(Procfile) run an RQ worker for reverie's jobs")
    sub.add_parser(
        "scheduler", help="(Procfile) enqueue memory's scheduled jobs at their intervals (RQ's cron)"
    )
    jobs = [follower for follower, _ in scheduled()]
    think = sub.add_parser(
        "think",
        help=f"run memory's scheduled jobs now: {', '.join(f.name for f in jobs)}",
        description="Each runs every 6 hours anyway (`reverie scheduler`, RQ's cron). "
        + " ".join(f"{f.name.capitalize()} {f.about}." for f in jobs)
        + " Each derives events, the same ones however often it runs.",
    )
    think.add_argument(
        "job", nargs="?", choices=[*(f.name for f in jobs), "all"], default="all", help="which (default: all)"
    )
    think.add_argument(
        "--now", action="store_true", help="run in this process instead of waiting for a worker to run it"
    )
    return parser


def _scope_flags(parser: argparse.ArgumentParser, what: str) -> None:
    """Memory Fabric's flags, on `remember` and `recall`."""
    outcome = parser.add_mutually_exclusive_group()
    outcome.add_argument(
        "--success", dest="outcome", action="store_const", const="success", help=f"{what} a way that worked"
    )
    outcome.add_argument(
        "--failed", dest="outcome", action="store_const", const="failed", help=f"{what} an anti-pattern"
    )
    parser.add_argument("--agent", metavar="A", help=f"{what} agent A's own (a subagent type)")
    parser.add_argument(
        "--global", dest="everywhere", action="store_true", help=f"{what} holding in every project"
    )


# Options whose value may start with "-": Claude Code's project keys do (-home-u-app).
_DASHED_VALUES = ("--project",)


def _attach_dashed_values(argv: list[str]) -> list[str]:
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
    if argv[:1] != ["hook"]:  # the hook parses its own arguments
        argv = _attach_dashed_values(argv)
    args = _parser().parse_args(argv)
    if args.command == "sql":
        from reverie import querying

        return querying.sql(args.query, "json" if args.json else "csv" if args.csv else "table")
    if args.command == "recall":
        from reverie import recalling
        from reverie.console import fail
        from reverie.remembering import current_project
        from schemas.recall import RecallRequest

        if args.limit < 1:
            return fail("--limit must be at least 1")
        try:
            as_of = recalling.parse_time(args.as_of) if args.as_of else None
        except ValueError:
            return fail(f"--as-of: not an ISO date or time: {args.as_of!r}")
        request = RecallRequest(
            prompt=args.query,
            project=None if args.all_projects else recalling.project_named(args.project) or current_project(),
            limit=args.limit,
            as_of=as_of,
            network=args.type,
            category=args.category,
            fusion=args.fusion,
            weighting=args.weighting,
            dedup=args.dedup,
            outcome=args.outcome,
            agent=args.agent,
            global_only=args.everywhere,
        )
        return recalling.recall(request, "json" if args.json else "table", args.explain)
    if args.command == "why":
        from reverie import explaining

        return explaining.explain(args.id, args.json)
    if args.command in ("remember", "forget"):
        from reverie import remembering

        if args.command == "remember":
            return remembering.remember_command(
                " ".join(args.text), args.category, args.outcome, args.agent, args.everywhere
            )
        return remembering.forget_command(args.id, args.reason)
    if args.command == "claude-code":
        from reverie import marketplace

        return marketplace.plugin_command() if args.folder == "plugin" else marketplace.marketplace_command()
    if args.command == "mcp":
        from reverie import mcp_server

        return mcp_server.serve()
    if args.command in ("install", "uninstall"):
        from reverie import installing

        do = installing.install if args.command == "install" else installing.uninstall
        return do(args.scope, args.dry_run)
    if args.command == "reflect":
        from reverie import recalling, reflecting, remembering

        if args.project is not None:
            project, root = recalling.place_named(args.project)
        else:
            project, root = remembering.current_place()
        return reflecting.reflect_command(" ".join(args.query), project, args.json, root or None)
    if args.command == "think":
        from reverie import thinking

        return thinking.think(args.job, here=args.now)
    if args.command == "import":
        from reverie import importing

        return importing.import_transcripts(args.paths, wait=not args.no_wait)
    from reverie import stack

    match args.command:
        case "hook":
            from ingest.hook import main as hook_main

            return hook_main(argv[1:])
        case "up":
            return stack.up(detach=args.detach, workers=args.workers)
        case "down":
            return stack.down()
        case "status":
            return stack.status(as_json=args.json)
        case "server":
            return stack.server()
        case "dispatch":
            return stack.dispatch(args.name)
        case "project":
            return stack.project()
        case "replay":
            return stack.replay()
        case "embed":
            return stack.embed(args.once)
        case "serve":
            return stack.serve()
        case "worker":
            return stack.worker()
        case "scheduler":
            return stack.scheduler()
    raise AssertionError(args.command)  # argparse accepts only the commands above
