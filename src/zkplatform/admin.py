"""`zkplatform admin`: operator commands on a store (placeholder, being written)."""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str]) -> int:
    print("zkplatform admin: not yet available")  # noqa: T201
    return 2
