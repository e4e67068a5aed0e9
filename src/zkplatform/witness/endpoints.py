"""The ways the server's pusher (domain/witnessing.py) reaches a witness: over HTTP, or in
process (the development witness of `serve --dev`, which has no host of its own)."""

from __future__ import annotations

from typing import Final

import httpx

from zkplatform.witness.core import WitnessCore
from zkplatform_tlog.witness_wire import ADD_CHECKPOINT_PATH

DEFAULT_TIMEOUT_S: Final = 10.0
# A witness answers a few signature lines or its size: more is not read.
MAX_ANSWER_BYTES: Final = 64 * 1024


class AnswerTooLarge(Exception):
    """A witness answered more than MAX_ANSWER_BYTES."""


class HttpWitness:
    """A witness at `url`, its submission prefix (`https://witness.example/w1`): POST
    `<url>/add-checkpoint`. The client is shared by every witness, or made for this one;
    `close` closes only one made here."""

    def __init__(
        self, url: str, *, client: httpx.AsyncClient | None = None, timeout: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self._url = url.rstrip("/") + ADD_CHECKPOINT_PATH
        parts = httpx.URL(url)
        # For log lines: never a userinfo or a query, where a credential could hide.
        self._name = str(parts.copy_with(userinfo=b"", query=None, fragment=None))
        self._owned = client is None
        # Redirects are not followed: a witness's submission URL is configured, not discovered.
        self._client = client or httpx.AsyncClient(follow_redirects=False)
        self._timeout = timeout

    @property
    def name(self) -> str:
        return self._name

    async def add_checkpoint(self, body: bytes) -> tuple[int, bytes, str]:
        async with self._client.stream("POST", self._url, content=body, timeout=self._timeout) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise AnswerTooLarge
                chunks.append(chunk)
            return response.status_code, b"".join(chunks), response.headers.get("content-type", "")

    async def aclose(self) -> None:
        if self._owned:
            await self._client.aclose()


class InProcessWitness:
    """A witness in this process: the core answers directly."""

    def __init__(self, core: WitnessCore, name: str = "in-process witness") -> None:
        self._core = core
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    async def add_checkpoint(self, body: bytes) -> tuple[int, bytes, str]:
        answer = await self._core.add_checkpoint(body)
        return answer.status, answer.body, answer.content_type
