from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.connect import CODECS, Codec
from tests.world import PEPPER, FakeClock, World, serve_in_process
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform

pytest_plugins = ["tests.pg", "tests.builds"]

E2E = Path(__file__).parent / "e2e"
# The session fixtures of tests/builds.py: a test that needs one, directly or through a fixture, has it in its closure.
BUILDS = {"ts_build", "client_packages"}


def needs_postgres(item: pytest.Item) -> bool:
    """Asks for a database, directly or through a fixture, or is the `postgresql` case of a parametrized store:
    those fixtures take `postgres_url` with request.getfixturevalue, out of sight of the fixture closure."""
    callspec = getattr(item, "callspec", None)
    return "postgres_url" in getattr(item, "fixturenames", ()) or (
        callspec is not None and "postgresql" in callspec.params.values()
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The markers that follow from where a test lives and what it asks for (see pyproject.toml);
    a test outside tests/e2e that starts a process carries `e2e` itself."""
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.e2e)
        if needs_postgres(item):
            item.add_marker(pytest.mark.postgres)
        if BUILDS.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.packages)


@pytest.fixture(params=CODECS, ids=lambda codec: codec.name)
def codec(request: pytest.FixtureRequest) -> Codec:
    codec: Codec = request.param
    return codec


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def platform(clock: FakeClock) -> Platform:
    return Platform.build(MemoryStore(), PEPPER, clock)


@pytest.fixture
async def world(platform: Platform) -> World:
    """The development data set, seeded into the memory store."""
    return await World.seed(platform)


@pytest.fixture
async def client(platform: Platform, world: World) -> AsyncIterator[httpx.AsyncClient]:
    async with await serve_in_process(platform) as client:
        yield client
