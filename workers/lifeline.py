"""A child process that dies with the process that started it, however that one ends.

Linux's PR_SET_PDEATHSIG has the kernel send the child a signal when the thread that forked it
ends, even by SIGKILL; the child asks for it between fork and exec, and ends at once if its
parent died before it asked. Elsewhere, nothing: a child outlives its parent there.
"""

import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def killed_with_this_process() -> Callable[[], None] | None:
    """What a child of this process runs before exec (Popen's `preexec_fn`) to be killed
    (SIGKILL) when this process dies; None where the system cannot."""
    if sys.platform != "linux":
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the line above
            os._exit(1)

    return arm


def every_fork_dies_with_its_parent() -> None:
    """Have every child this process forks from now on (and theirs, as they fork in turn) killed
    when its parent ends, as `killed_with_this_process` does a child it execs (Linux only)."""
    if sys.platform != "linux":
        return
    import ctypes

    forking = [0]

    def before() -> None:
        forking[0] = os.getpid()

    def in_child() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != forking[0]:  # the parent ended before we asked
            os._exit(1)

    os.register_at_fork(before=before, after_in_child=in_child)
