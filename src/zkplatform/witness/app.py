"""The witness over HTTP: a plain ASGI application serving `POST /add-checkpoint` (C2SP
tlog-witness, the statuses and content types of core.py) and `GET /healthz`.

Whatever a request holds, the answer is a status and a short text: a body over the limit is 413,
an error of the state is 503, a bug is 500, never a traceback. Each refusal is one log line
(status, why, origin), never the request's body.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from zkplatform.witness.core import TEXT, Answer, WitnessCore
from zkplatform.witness.state import StateError
from zkplatform_tlog.witness_wire import ADD_CHECKPOINT_PATH, STATUS_UNPROCESSABLE

log = logging.getLogger("zkplatform.witness")

# A request is a proof of at most 63 hashes and a checkpoint note with a few signatures: a few KiB.
MAX_BODY_BYTES: Final = 16 * 1024

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class _TooLarge(Exception):
    pass


class _Disconnected(Exception):
    pass


class WitnessApp:
    """The ASGI application of a witness."""

    def __init__(self, core: WitnessCore, *, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self._core = core
        self._max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        if path == "/healthz":
            if method in {"GET", "HEAD"}:
                await _answer(send, Answer(200, b"ok\n", TEXT))
            else:
                await _answer(send, Answer(405, b"method not allowed\n", TEXT), allow="GET, HEAD")
        elif path == ADD_CHECKPOINT_PATH:
            if method == "POST":
                await self._add_checkpoint(scope, receive, send)
            else:
                await _answer(send, Answer(405, b"method not allowed\n", TEXT), allow="POST")
        else:
            await _answer(send, Answer(404, b"not found\n", TEXT))

    async def _add_checkpoint(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            body = await self._body(scope, receive)
        except _TooLarge:
            answer = Answer(
                413, f"request body over {self._max_body_bytes} bytes\n".encode(), TEXT, refusal="too large"
            )
        except _Disconnected:
            return
        else:
            answer = await self._answer_to(body)
        if answer.refusal:
            level = logging.WARNING if answer.status == STATUS_UNPROCESSABLE else logging.INFO
            origin = f" origin={answer.origin}" if answer.origin else ""
            log.log(level, "add-checkpoint refused: %d %s%s", answer.status, answer.refusal, origin)
        await _answer(send, answer)

    async def _answer_to(self, body: bytes) -> Answer:
        try:
            return await self._core.add_checkpoint(body)
        except StateError as error:
            return Answer(503, b"the witness cannot use its state now\n", TEXT, refusal=str(error))
        except Exception:
            log.exception("add-checkpoint failed")
            return Answer(500, b"internal error\n", TEXT)

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        for name, value in scope["headers"]:
            # A declared length over the limit is refused before any of it is read (the HTTP layer
            # has refused a length that is not a number).
            if name == b"content-length" and value.isdigit() and int(value) > self._max_body_bytes:
                raise _TooLarge
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._max_body_bytes:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


async def _answer(send: Send, answer: Answer, *, allow: str | None = None) -> None:
    headers = [(b"content-type", answer.content_type.encode()), (b"content-length", str(len(answer.body)).encode())]
    if allow is not None:
        headers.append((b"allow", allow.encode()))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": answer.body})


async def _lifespan(receive: Receive, send: Send) -> None:
    """Nothing to start or stop: the state is opened before serving and needs no closing."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
