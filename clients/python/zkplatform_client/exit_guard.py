"""A plain interpreter exit after calls through pyqwest (connectrpc's HTTP client), safe on Python
3.11 to 3.13.

pyqwest completes each awaited call from a thread of its own (a Rust tokio thread, unknown to
`threading`): it calls the event loop's `call_soon_threadsafe`, which queues the result and then
writes to the loop's wake-up socket with the GIL released. The awaiting coroutine can resume,
and the script end, before that thread has taken the GIL back. On Python 3.11 to 3.13 a thread
that takes the GIL once the interpreter is finalizing is ended with `pthread_exit`, whose forced
unwinding through Rust frames aborts the whole process (SIGABRT, after all the work was done;
CPython gh-87135, fixed in 3.14 by parking such threads instead). Closing the transport does not
help: the thread holds no transport, only the GIL's promise.

So at exit, while the interpreter still runs normally (atexit handlers run before finalization),
this waits until no such thread is left inside Python: it observes them in `sys._current_frames()`
(a thread that attached to the interpreter and has not left it) and releases the GIL until they
have (bounded: a foreign thread stuck in Python must not hold the exit up for long).
"""

from __future__ import annotations

import atexit
import sys
import threading
import time

# Long enough for a thread that only waits for the GIL; short enough that a thread stuck in
# Python (not pyqwest's) delays the exit barely.
_BOUND_S = 1.0
_installed = False


def foreign_threads_in_python() -> list[int]:
    """Threads inside the interpreter now that `threading` did not start (pyqwest's among them)."""
    known = {thread.ident for thread in threading.enumerate()}
    return [ident for ident in sys._current_frames() if ident not in known]  # noqa: SLF001 # documented, the only view of them


def wait_for_foreign_threads(bound_s: float = _BOUND_S) -> bool:
    """Release the GIL until no foreign thread is inside Python (at most `bound_s`): whether none is."""
    deadline = time.monotonic() + bound_s
    while foreign_threads_in_python():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)  # releases the GIL, which the waiting thread takes to finish its call
    return True


def install() -> None:
    """Wait for them at interpreter exit (once per process; nothing to do from Python 3.14 on)."""
    global _installed  # noqa: PLW0603 # one registration per process
    if _installed or sys.version_info >= (3, 14):
        return
    atexit.register(wait_for_foreign_threads)
    _installed = True
