"""Records are written by the queue's thread: in order, with their exception and fields, none lost at stop."""

from __future__ import annotations

import io
import json
import logging

from zkplatform.observability.logs import ACCESS_LOGGER, queued_handler


def logger_writing_to(handler: logging.Handler, name: str) -> logging.Logger:
    logger = logging.getLogger(f"{name}.queued-test")
    logger.propagate = False
    logger.handlers = [handler]
    logger.setLevel(logging.INFO)
    return logger


def stop(handler: logging.Handler) -> None:
    handler.close()  # as logging.shutdown does at exit: writes what is still queued


def test_records_are_written_in_order_and_none_is_lost_at_stop() -> None:
    stream = io.StringIO()
    handler = queued_handler("text", stream)
    access = logger_writing_to(handler, ACCESS_LOGGER)

    for n in range(500):
        access.info("call %d", n)
    stop(handler)

    lines = stream.getvalue().splitlines()
    assert [line.rsplit(" ", 1)[1] for line in lines] == [str(n) for n in range(500)]


def test_json_lines_keep_the_exception_and_the_access_fields_apart() -> None:
    stream = io.StringIO()
    handler = queued_handler("json", stream)
    logger = logger_writing_to(handler, "zkplatform")

    try:
        raise ValueError("broken")  # noqa: TRY301 # a real exception, with its traceback
    except ValueError:
        logger.exception("it failed")
    logger.info("access", extra={"access": {"procedure": "p", "code": "ok"}})
    stop(handler)

    failed, accessed = (json.loads(line) for line in stream.getvalue().splitlines())
    assert failed["message"] == "it failed"
    assert "ValueError: broken" in failed["exception"]
    assert (accessed["message"], accessed["procedure"], accessed["code"]) == ("access", "p", "ok")
