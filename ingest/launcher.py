"""The hook as `reverie install` writes it: `PYTHON -S -I .../ingest/launcher.py EVENT`.

Claude Code runs a hook per event, and waits for PreToolUse's before every tool call. Started
this way, the interpreter skips `site` (the .pth files of every installed package, about 3 ms)
and the console script's wrapper (which imports `re`), and takes nothing from the environment
or the working directory: the folder holding reverie's packages is put first on the path by
hand, and the hook needs nothing else but the standard library.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ingest.hook import main  # (the path above first)

if __name__ == "__main__":
    os.umask(0o077)  # as `reverie`'s own entry point does: what it writes is this user's alone
    sys.exit(main(sys.argv[1:]))
