"""The log formats of `serve --log-format`: text for people, JSON (one object a line) for collectors."""

from __future__ import annotations

import json
import logging
import queue
from datetime import UTC, datetime
from logging.handlers import QueueHandler, QueueListener
from typing import Final, TextIO

LOG_FORMATS: Final = ("text", "json")
TEXT_FORMAT: Final = "%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s"
TEXT_DATE_FORMAT: Final = "%Y-%m-%dT%H:%M:%S%z"
ACCESS_LOGGER: Final = "zkplatform.access"


# A record's values of their own: `log.info("...", extra={FIELDS: {"token_id": ...}})`. Keys of
# their own in JSON, `key=value` after the message in text, so that collectors need not parse messages.
FIELDS: Final = "fields"


def _fields(record: logging.LogRecord) -> dict[str, object]:
    fields = getattr(record, FIELDS, None)
    return fields if isinstance(fields, dict) else {}


class TextFormatter(logging.Formatter):
    """TEXT_FORMAT, then the record's fields as key=value."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT, datefmt=TEXT_DATE_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 # logging's name
        line = super().formatMessage(record)
        if fields := _fields(record):
            line += " " + " ".join(f"{key}={value}" for key, value in fields.items())
        return line


class JSONFormatter(logging.Formatter):
    """time, level, logger, message, pid; an access line's fields and a record's fields as keys
    of their own; an exception as text."""

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
        entry.update(_fields(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def formatter(log_format: str) -> logging.Formatter:
    if log_format == "json":
        return JSONFormatter()
    return TextFormatter()


class _QueuedHandler(QueueHandler):
    """Queues records for its listener's thread, which writes them; closing it (as
    logging.shutdown does at the process's exit) writes what is still queued."""

    def __init__(self, records: queue.SimpleQueue[logging.LogRecord], output: logging.Handler) -> None:
        super().__init__(records)
        self._listener: QueueListener | None = QueueListener(records, output)
        self._listener.start()

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        # The listener runs in this process: the record need not be flattened to text, and
        # its formatter still sees the exception and an access line's fields apart.
        return record

    def close(self) -> None:
        if self._listener is not None:
            listener, self._listener = self._listener, None
            listener.stop()
        super().close()


def queued_handler(log_format: str, stream: TextIO | None = None) -> QueueHandler:
    """A handler that only queues: a thread of its own writes the records, so that no
    call waits for the log's writes."""
    output = logging.StreamHandler(stream)
    output.setFormatter(formatter(log_format))
    return _QueuedHandler(queue.SimpleQueue(), output)
