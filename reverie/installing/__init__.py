"""`reverie install claude-code` and `reverie uninstall claude-code`: hooks and the MCP server,
written where Claude Code reads them, and taken back.

Install merges one hook entry per Claude Code event into the scope's settings.json, keeping
every hook and key of the user's, and registers `reverie mcp` as `claude mcp add --scope`
would. It is idempotent: reverie's own entries (the commands it writes, this version's or an
older one's, or the `reverie hook` lines the README once had users write; entries.py says how
they are told apart) are replaced, never doubled, and never anyone else's. Before a file is
first changed, its bytes are kept beside it (`settings.json.reverie-backup`); uninstall puts
them back byte for byte when nobody changed the file since, and otherwise takes out reverie's
entries alone.

A hook entry runs `PYTHON -S -I .../ingest/launcher.py EVENT || true`: this interpreter
without `site` (see ingest/launcher.py), and `|| true` because Claude Code reads a hook's exit
status 2 as "block": had an upgrade removed the interpreter or the file, the hook would
otherwise stop every prompt. `reverie status` says when an installed hook points at a path
that is gone; installing again rewrites it. The project scope's files are every checkout's, so
they name no path of this machine: their hooks run `reverie hook EVENT || true` and their MCP
server `reverie mcp`, whichever `reverie` each user's PATH finds.

No secret goes into a command (`ps` shows it) or a settings file (often 0644, and the project's
shared through git): what install is given to reach a stack elsewhere is placed by
connection.py.

One module a concern:

- entries.py: reverie's entries, and how they merge into Claude Code's settings (the settings merge);
- connection.py: where the values install is given go, secrets to the connection file;
- plan.py: what install and uninstall do to each file of a scope, before anything is written;
- jsontext.py: a file's text edited where reverie's values change, its formatting kept;
- transaction.py: writing those changes, each file's bytes from before kept, and what was written
  recorded for uninstall;
- retention.py: how long Claude Code keeps its transcripts, and raising it with the user's consent;
- stale.py: installed hooks that point at a path that is gone;
- command.py: the two commands, which plan, show or apply, and say what they did.
"""
