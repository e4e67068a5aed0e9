"""A platform service's caller comes from authentication, through the call's context (rpc/call_auth.py).

The app mounts Authenticate and CountMintAttempts before every platform servicer; these tests
mount a broker without them, through connectrpc's real application, to show that a servicer
missing what they find still answers as the API says: never `internal`, never an uncounted mint.
"""

from __future__ import annotations

import httpx
from connectrpc.interceptor import Interceptor

from tests.connect import BROKER_MINT, JSON, error_of, headers
from tests.world import BASE_URL, PEPPER, FakeClock, World
from zkplatform.asgi import ASGIApp
from zkplatform.domain.broker import MintPolicy
from zkplatform.observability.calls import ObserveCalls
from zkplatform.rpc.interceptors.auth import Authenticate
from zkplatform.rpc.interceptors.error_mapping import ErrorMapping
from zkplatform.rpc.origin import Origin
from zkplatform.rpc.servicers.broker import BrokerServicer
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import broker_pb2
from zkplatform_api.platform.v1.broker_connect import BrokerServiceASGIApplication

BROKER_LIST = "/platform.v1.BrokerService/ListTokens"


def broker(platform: Platform, *, authenticate: bool) -> httpx.AsyncClient:
    interceptors: list[Interceptor] = [ErrorMapping()]
    if authenticate:
        interceptors.append(Authenticate(platform.authenticator, Origin()))
    app: ASGIApp = BrokerServiceASGIApplication(BrokerServicer(platform.broker), interceptors=interceptors)
    observed = ObserveCalls(app, None, [BROKER_MINT[1:], BROKER_LIST[1:]], ())
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=observed), base_url=BASE_URL)


async def test_a_servicer_no_authentication_passed_answers_unauthenticated(world: World, platform: Platform) -> None:
    async with broker(platform, authenticate=False) as client:
        listed = await client.post(BROKER_LIST, json={}, headers=headers(JSON, world.token("alice")))

    assert listed.status_code == 401
    assert error_of(listed)["code"] == "unauthenticated"


async def test_a_mint_no_interceptor_counted_is_counted_by_the_servicer(clock: FakeClock) -> None:
    platform = Platform.build(MemoryStore(), PEPPER, clock, MintPolicy(mints_per_minute=2))
    world = await World.seed(platform)
    request = JSON.encode(broker_pb2.MintUserApiTokenRequest(tenant_id="acme", requested_scopes=["vault.items.read"]))
    async with broker(platform, authenticate=True) as client:
        answers = [
            await client.post(BROKER_MINT, content=request, headers=headers(JSON, world.token("alice")))
            for _ in range(3)
        ]

    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert error_of(answers[2])["code"] == "resource_exhausted"
