from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.connect import CODECS, Codec
from zkplatform.app import create_app
from zkplatform.config import Settings


@pytest.fixture(params=CODECS, ids=lambda codec: codec.name)
def codec(request: pytest.FixtureRequest) -> Codec:
    codec: Codec = request.param
    return codec


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
        yield client
