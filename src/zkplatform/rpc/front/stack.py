"""A stack of ASGI middlewares declared as a list, outermost first, and built from it.

The list is the one statement of the order (app.py declares it; docs point at it):
`Middleware(cls, **options)` is built as `cls(app, **options)` around the layers after it.

A layer with nothing left to do once the layers after it return hands back their awaitable
from a plain `def __call__` rather than awaiting it; so does a send or a receive it wraps when
it only looks at a message on its way. A stream then holds no frame of that layer for its
whole life, and its messages pass through no coroutine of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from zkplatform.asgi import ASGIApp

_Layer = TypeVar("_Layer")


class Middleware:
    """One layer of a stack: its class and the options it is built with."""

    __slots__ = ("cls", "options")

    def __init__(self, cls: Callable[..., ASGIApp], /, **options: Any) -> None:
        self.cls = cls
        self.options = options


def assemble(stack: Sequence[Middleware], app: ASGIApp) -> list[ASGIApp]:
    """Each layer of `stack` built around those after it, `app` innermost: every layer, outermost first."""
    layers = [app]
    for middleware in reversed(stack):
        layers.append(middleware.cls(layers[-1], **middleware.options))
    return layers[::-1]


def layer_of(layers: Sequence[ASGIApp], kind: type[_Layer]) -> _Layer:
    """The layer of this class (the server asks some of them about the calls they hold)."""
    return next(layer for layer in layers if isinstance(layer, kind))
