"""The log formats of `serve --log-format`: text for people, JSON (one object a line) for collectors."""

from __future__ import annotations

import json
import logging
import os
import threading
from datetime import UTC, datetime
from typing import Final, TextIO

LOG_FORMATS: Final = ("text", "json")
TEXT_FORMAT: Final = "%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s"
TEXT_DATE_FORMAT: Final = "%Y-%m-%dT%H:%M:%S%z"
ACCESS_LOGGER: Final = "zkplatform.access"
FLUSH_INTERVAL_SECONDS: Final = 0.2
_PENDING_LIMIT: Final = 64 * 1024  # characters of access lines held back, at most


class JSONFormatter(logging.Formatter):
    """time, level, logger, message, pid; an access line's fields as keys of their own; an exception as text."""

    def format(self, record: logging.LogRecord) -> str:
        access = getattr(record, "access", None)
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            # an access line's fields are keys of their own: its message would only repeat them
            "message": "access" if isinstance(access, dict) else record.getMessage(),
            "pid": record.process,
        }
        if isinstance(access, dict):
            entry.update(access)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def formatter(log_format: str) -> logging.Formatter:
    if log_format == "json":
        return JSONFormatter()
    return logging.Formatter(TEXT_FORMAT, datefmt=TEXT_DATE_FORMAT)


class BatchingHandler(logging.StreamHandler[TextIO]):
    """Writes access lines in batches, everything else at once.

    A line per call, each written by a system call of its own, cost the server about
    5 microseconds a call (bench/analysis.md). Access lines are held back and written
    together: every FLUSH_INTERVAL_SECONDS (by a thread of the handler's), when 64 KiB
    are waiting, before any other record (so the log keeps its order), and when logging
    shuts down at the process's exit (logging.shutdown flushes every handler), so none
    is lost when the server stops."""

    def __init__(self, stream: TextIO | None = None, interval: float = FLUSH_INTERVAL_SECONDS) -> None:
        super().__init__(stream)
        self._pending: list[str] = []
        self._pending_size = 0
        self._interval = interval
        self._flusher: threading.Thread | None = None
        self._stop_flushing = threading.Event()
        # A forked worker has no flusher thread, whatever its parent had: it starts its own.
        os.register_at_fork(after_in_child=self._forget_flusher)

    def _forget_flusher(self) -> None:
        self._flusher = None

    def emit(self, record: logging.LogRecord) -> None:  # called with the handler's lock held
        try:
            line = self.format(record) + self.terminator
        except Exception:  # noqa: BLE001 # logging's own contract: report and carry on
            self.handleError(record)
            return
        self._pending.append(line)
        self._pending_size += len(line)
        if record.name != ACCESS_LOGGER or self._pending_size >= _PENDING_LIMIT:
            self.flush()
        elif self._flusher is None:
            self._flusher = threading.Thread(target=self._flush_periodically, name="log-flusher", daemon=True)
            self._flusher.start()

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr] # created by Handler.__init__
            if self._pending:
                lines, self._pending, self._pending_size = "".join(self._pending), [], 0
                try:
                    self.stream.write(lines)
                    self.stream.flush()
                except Exception:  # noqa: BLE001 # as StreamHandler.emit: a log that cannot be written stops nothing
                    self.handleError(logging.makeLogRecord({"msg": "access lines could not be written"}))
            elif self.stream and hasattr(self.stream, "flush"):
                self.stream.flush()

    def close(self) -> None:
        self._stop_flushing.set()
        self.flush()
        super().close()

    def _flush_periodically(self) -> None:
        while not self._stop_flushing.wait(self._interval):
            self.flush()
