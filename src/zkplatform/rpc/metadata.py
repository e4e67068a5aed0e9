"""Metadata interceptors that act when a call starts and have nothing to do at its end."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext


class StartCheck:
    """Base of metadata interceptors run before the body is parsed; subclasses define on_start."""

    async def on_end(self, token: None, ctx: RequestContext[Any, Any], error: Exception | None, /) -> None:
        return None
