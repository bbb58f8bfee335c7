"""Whether a process of this machine has ended, by its pid."""

import os


def ended(pid: int) -> bool:
    """Whether process `pid` has ended: gone, or a zombie no one has reaped yet (False where
    there is no /proc to tell). PermissionError if the pid is another user's process now."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):  # not Linux (or gone just now: the next look sees it)
        return False
