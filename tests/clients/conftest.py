"""The Python client package's own tests, in process: its sources (clients/python) come first on
the path, as `make clients` stages them into the wheel (the other tests run the wheel itself)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import Server, serving

PY_CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"
if str(PY_CLIENT) not in sys.path:
    sys.path.insert(0, str(PY_CLIENT))


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A `zkplatform serve --dev`, for the module's tests."""
    with serving(tmp_path_factory.mktemp("dev"), "--dev") as server:
        yield server


@pytest.fixture(scope="module")
def dev_credentials(dev_server: Server) -> Path:
    """Its credentials file: every principal's token, key id and demo private key."""
    return dev_server.log_path.parent / "var" / "dev-credentials.json"


def dev_principals(credentials: Path) -> dict[str, dict[str, Any]]:
    """The principals of a development credentials file by id, each with its tenant's id."""
    document = json.loads(credentials.read_text())
    return {p["principalId"]: {**p, "tenantId": t["tenantId"]} for t in document["tenants"] for p in t["principals"]}
