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
