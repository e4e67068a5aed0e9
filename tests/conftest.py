from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.connect import CODECS, Codec
from tests.world import PEPPER, FakeClock, World, serve_in_process
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform

pytest_plugins = ["tests.pg", "tests.builds"]


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
