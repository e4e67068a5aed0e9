"""The logging of `zkplatform serve`, the same in every process."""

from __future__ import annotations

import logging

from zkplatform.observability.logs import queued_handler


def configure_logging(level: str = "info", log_format: str = "text") -> None:
    """One format for every process: the pid tells the workers apart, and times carry their UTC offset
    (text), or one JSON object a line (json).

    Debug output is ours only: the HTTP/2 libraries log every decoded header at
    debug level, Authorization included, and a token must never reach a log."""
    chosen = logging.getLevelNamesMapping()[level.upper()]
    # A line per call: spare each record what no format here shows (the logging
    # HOWTO's "Optimization"): the caller's file and line (a walk up the stack),
    # the thread's and the multiprocessing process's names.
    logging._srcfile = None  # noqa: SLF001 # the documented switch
    logging.logThreads = False
    logging.logMultiprocessing = False
    logging.basicConfig(level=max(chosen, logging.INFO), handlers=[queued_handler(log_format)])
    logging.getLogger("zkplatform").setLevel(chosen)
