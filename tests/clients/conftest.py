"""The Python client package's own tests, in process: its sources (clients/python) come first on
the path, as `make clients` stages them into the wheel (the other tests run the wheel itself)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import Server, serving

PY_CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"
if str(PY_CLIENT) not in sys.path:
    sys.path.insert(0, str(PY_CLIENT))

from zkplatform_client import DeviceKeyPair, KeyDirectory, KeyLogState, TrustPolicy  # noqa: E402 - after the path


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A `zkplatform serve --dev`, for the module's tests."""
    with serving(tmp_path_factory.mktemp("dev"), "--dev") as server:
        yield server


@pytest.fixture(scope="module")
def dev_credentials(dev_server: Server) -> Path:
    """Its credentials file: the log key and witness to pin, every principal's token and demo
    device (its id and private keys)."""
    return dev_server.log_path.parent / "var" / "dev-credentials.json"


def dev_principals(credentials: Path) -> dict[str, dict[str, Any]]:
    """The principals of a development credentials file by id, each with its tenant's id."""
    document = json.loads(credentials.read_text())
    return {p["principalId"]: {**p, "tenantId": t["tenantId"]} for t in document["tenants"] for p in t["principals"]}


def dev_policy(credentials: Path) -> TrustPolicy:
    """What a client of the development server pins: its log key and witness, as the file says."""
    document = json.loads(credentials.read_text())
    return TrustPolicy(document["logKeys"], document["witnesses"], document["witnessQuorum"])


def dev_device(principal: dict[str, Any]) -> DeviceKeyPair:
    """A principal's demo device, from its entry in the credentials file."""
    return DeviceKeyPair.from_jwks(principal["signingKeyJwk"], principal["privateKeyJwk"])


async def verified_until(directory: KeyDirectory, holds: Callable[[KeyLogState], bool]) -> KeyLogState:
    """The directory verified again until its state holds (bounded): a change the server
    answered shows once its witness cosigned a checkpoint that holds it."""
    for _ in range(200):
        state = await directory.verify()
        if holds(state):
            return state
        await asyncio.sleep(0.05)
    msg = "the verified key log never came to hold what was expected"
    raise AssertionError(msg)
