"""The log formats of `serve --log-format`: text for people, JSON (one object a line) for collectors."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Final

LOG_FORMATS: Final = ("text", "json")
TEXT_FORMAT: Final = "%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s"
TEXT_DATE_FORMAT: Final = "%Y-%m-%dT%H:%M:%S%z"


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
