"""DPoP keys and proofs for the tests: the Python client package's (zkplatform_client.dpop_proof,
what docs/clients.md has curl users run), with its sources first on the path as
tests/clients/conftest.py puts them."""

from __future__ import annotations

import sys
from pathlib import Path

PY_CLIENT = Path(__file__).resolve().parents[1] / "clients" / "python"
if str(PY_CLIENT) not in sys.path:
    sys.path.insert(0, str(PY_CLIENT))

from zkplatform_client.dpop_proof import KeyKind, make_proof, new_key, thumbprint  # noqa: E402 - after the path

__all__ = ["KeyKind", "make_proof", "new_key", "thumbprint"]
