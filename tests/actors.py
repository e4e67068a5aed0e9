"""Authors of the changes tests make directly on a store (see zkplatform.domain.audit)."""

from __future__ import annotations

from zkplatform.domain.audit import Actor

OPERATOR = Actor.operator(0)


def at(now: int) -> Actor:
    """The operator, changing something at `now` (a delete's or an update's time)."""
    return Actor.operator(now)
