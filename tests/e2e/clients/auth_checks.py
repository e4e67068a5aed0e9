"""The auth interceptor of the Python package against a real server; prints one JSON report.

Run with the Python of a venv where the wheel is installed (tests/e2e/test_client_packages.py):

    python auth_checks.py BASE_URL TOKEN

The server must let tokens live 1 s (ZKPLATFORM_TOKEN_TTL_MIN=1) and mint often. An inner
interceptor (after the auth one) sees each request that goes out: `attempts`. auth_checks.ts
does the same with the npm package and prints the same report.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from connectrpc.code import Code
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.request import RequestContext
from google.rpc.error_details_pb2 import ErrorInfo
from protobuf.wkt import Any as AnyMessage

from zkplatform_api.platform.v1.broker_connect import BrokerServiceClient
from zkplatform_api.platform.v1.broker_pb2 import MintUserApiTokenRequest
from zkplatform_api.platform.v1.vault_connect import VaultServiceClient
from zkplatform_api.platform.v1.vault_pb2 import GetItemRequest, ListItemsRequest, WatchChangesRequest
from zkplatform_client import AuthInterceptor, DPoPKey, Protocol, TokenProvider, clients, is_token_expired

VAULT = "acme-shared"
DEADLINE_S = 15.0  # bounds every wait for a token to expire


class Attempts:
    """Each request that goes out, and how it ended (a metadata interceptor: every kind of call)."""

    def __init__(self) -> None:
        self.codes: list[str] = []

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        return None

    async def on_end(self, _: None, ctx: RequestContext[Any, Any], error: Exception | None) -> None:
        self.codes.append("ok" if error is None else error.code.value if isinstance(error, ConnectError) else "error")


class Minter:
    """A token callback: counts how often it is asked."""

    def __init__(self, broker: BrokerServiceClient, ttl: int, tokens: list[str] | None = None) -> None:
        self.broker, self.ttl, self.asked, self.tokens = broker, ttl, 0, tokens

    async def __call__(self) -> str:
        self.asked += 1
        if self.tokens:
            return self.tokens.pop(0)
        return await mint(self.broker, self.ttl)


async def mint(broker: BrokerServiceClient, ttl: int, pop_key_id: str = "") -> str:
    request = MintUserApiTokenRequest(
        tenant_id="acme", requested_scopes=["vault.items.read"], requested_ttl_seconds=ttl, pop_key_id=pop_key_id
    )
    return str((await broker.mint_user_api_token(request)).token.access_token)


async def expired_tokens(base_url: str, broker: BrokerServiceClient, count: int) -> list[str]:
    """Tokens of 1 s, once the server says the last one expired (a bounded wait of about 1 s)."""
    tokens = [await mint(broker, 1) for _ in range(count)]
    deadline = time.monotonic() + DEADLINE_S
    async with VaultServiceClient(base_url) as vault:
        while time.monotonic() < deadline:
            try:
                await vault.list_items(
                    ListItemsRequest(vault_id=VAULT, page_size=1), headers={"authorization": f"Bearer {tokens[-1]}"}
                )
            except ConnectError as error:
                if is_token_expired(error):
                    return tokens
                raise
    raise AssertionError("the minted tokens did not expire in time")


def code_of(error: BaseException | None) -> str:
    if error is None:
        return "ok"
    return error.code.value if isinstance(error, ConnectError) else type(error).__name__


async def outcome(call: Awaitable[object]) -> str:
    try:
        await call
    except ConnectError as error:
        return code_of(error)
    return "ok"


def vault_of(base_url: str, token: Any, attempts: Attempts) -> VaultServiceClient:
    return VaultServiceClient(base_url, interceptors=[AuthInterceptor(token), attempts])


async def renewal(base_url: str, broker: BrokerServiceClient) -> dict[str, Any]:
    """Tokens of 2 s (at least 1 s once minted): calls go on until one finds its token expired."""
    minter, attempts = Minter(broker, 2), Attempts()
    calls, failed = 0, 0
    async with vault_of(base_url, minter, attempts) as vault:
        deadline = time.monotonic() + DEADLINE_S
        while minter.asked < 2 and time.monotonic() < deadline:
            failed += await outcome(vault.get_item(GetItemRequest(vault_id=VAULT, item_id="item-1"))) != "ok"
            calls += 1
    return {
        "asked": minter.asked,
        "failed": failed,
        "extraAttempts": len(attempts.codes) - calls,
        "unauthenticated": attempts.codes.count("unauthenticated"),
    }


async def never_twice(base_url: str, broker: BrokerServiceClient) -> dict[str, Any]:
    minter, attempts = Minter(broker, 60, await expired_tokens(base_url, broker, 2)), Attempts()
    async with vault_of(base_url, minter, attempts) as vault:
        code = await outcome(vault.get_item(GetItemRequest(vault_id=VAULT, item_id="item-1")))
    return {"code": code, "asked": minter.asked, "attempts": len(attempts.codes)}


async def fixed_expired(base_url: str, broker: BrokerServiceClient) -> dict[str, Any]:
    (token,) = await expired_tokens(base_url, broker, 1)
    attempts = Attempts()
    async with vault_of(base_url, token, attempts) as vault:
        code = await outcome(vault.get_item(GetItemRequest(vault_id=VAULT, item_id="item-1")))
    return {"code": code, "attempts": len(attempts.codes)}


async def other_errors(base_url: str, broker: BrokerServiceClient) -> dict[str, Any]:
    minter, attempts = Minter(broker, 60), Attempts()
    async with vault_of(base_url, minter, attempts) as vault:
        code = await outcome(vault.get_item(GetItemRequest(vault_id="globex-main", item_id="item-1")))
    return {"code": code, "asked": minter.asked, "attempts": len(attempts.codes)}


async def concurrent(base_url: str, broker: BrokerServiceClient) -> dict[str, Any]:
    (expired,) = await expired_tokens(base_url, broker, 1)
    minter, attempts = Minter(broker, 60, [expired]), Attempts()
    async with vault_of(base_url, minter, attempts) as vault:
        codes = await asyncio.gather(
            *(outcome(vault.get_item(GetItemRequest(vault_id=VAULT, item_id=f"item-{i}"))) for i in range(1, 6))
        )
    return {"ok": codes.count("ok"), "asked": minter.asked, "attempts": len(attempts.codes)}


async def stream(base_url: str, broker: BrokerServiceClient) -> dict[str, Any]:
    """A stream refused for an expired token is not repeated; the next call carries a new token."""
    (expired,) = await expired_tokens(base_url, broker, 1)
    minter, attempts = Minter(broker, 60, [expired]), Attempts()
    async with vault_of(base_url, minter, attempts) as vault:

        async def watch() -> None:
            async for _ in vault.watch_changes(WatchChangesRequest(vault_id=VAULT, since_sequence=0)):
                break

        code = await outcome(watch())
        asked = minter.asked
        attempts_after_stream = len(attempts.codes)
        following = await outcome(vault.get_item(GetItemRequest(vault_id=VAULT, item_id="item-1")))
    return {
        "code": code,
        "askedByStream": asked,
        "attempts": attempts_after_stream,
        "next": following,
        "askedAfter": minter.asked,
    }


async def dpop(base_url: str, token: str) -> dict[str, Any]:
    """A bound token over every protocol, by POST and in the GET form, unary and streaming."""
    key = DPoPKey.generate()
    async with clients(base_url, token=token, dpop=key) as minting:
        bound = await mint(minting.broker, 300, key.thumbprint)
    results: dict[str, Any] = {}
    protocols: tuple[Protocol, ...] = ("connect-json", "connect-binary", "grpc", "grpc-web")
    for protocol in protocols:
        async with clients(base_url, protocol, token=bound, dpop=key) as platform:
            request = GetItemRequest(vault_id=VAULT, item_id="item-1")

            async def watch(platform: Any = platform) -> None:
                async for _ in platform.vault.watch_changes(WatchChangesRequest(vault_id=VAULT, since_sequence=0)):
                    break

            results[protocol] = {
                "post": await outcome(platform.vault.get_item(request)),
                "get": await outcome(platform.vault.get_item(request, use_get=True)),
                "list": await outcome(platform.vault.list_items(ListItemsRequest(vault_id=VAULT), use_get=True)),
                "watch": await outcome(watch()),
            }
    async with clients(base_url, token=bound) as bearer:
        results["asBearer"] = await outcome(bearer.vault.get_item(GetItemRequest(vault_id=VAULT, item_id="item-1")))
    # A proof per call: a DPoPKey made from the saved JWK is the same key.
    results["reloaded"] = DPoPKey.from_jwk(key.private_jwk()).thumbprint == key.thumbprint
    return results


def provider_refusals() -> dict[str, Any]:
    try:
        TokenProvider("")
    except ValueError:
        empty = "refused"
    else:
        empty = "accepted"
    return {"emptyToken": empty}


def refusal(code: Code, message: str, domain: str | None = None, reason: str = "") -> ConnectError:
    """A refusal as a server sends it: the ErrorInfo travels as a google.protobuf.Any's bytes."""
    details = []
    if domain is not None:
        value = ErrorInfo(domain=domain, reason=reason).SerializeToString()
        details.append(ErrorDetail(AnyMessage(type_url="type.googleapis.com/google.rpc.ErrorInfo", value=value)))
    return ConnectError(code, message, details)


def reasons() -> dict[str, bool]:
    """Which refusals count as an expired token: the ErrorReason of the contract, or the message of
    a server that sends no ErrorInfo on unauthenticated; nothing else."""
    unauthenticated = Code.UNAUTHENTICATED
    cases = {
        "reason": refusal(unauthenticated, "the token has expired", "zkplatform.dev", "TOKEN_EXPIRED"),
        "message": refusal(unauthenticated, "token expired"),
        "otherReason": refusal(unauthenticated, "token expired", "zkplatform.dev", "TOKEN_REVOKED"),
        "otherDomain": refusal(unauthenticated, "token revoked", "example.com", "TOKEN_EXPIRED"),
        "otherMessage": refusal(unauthenticated, "token revoked"),
        "otherCode": refusal(Code.PERMISSION_DENIED, "token expired"),
    }
    return {name: is_token_expired(error) for name, error in cases.items()}


async def main(base_url: str, token: str) -> None:
    async with BrokerServiceClient(base_url, interceptors=[AuthInterceptor(token)]) as broker:
        checks: dict[str, Callable[[], Awaitable[dict[str, Any]]]] = {
            "renewal": lambda: renewal(base_url, broker),
            "neverTwice": lambda: never_twice(base_url, broker),
            "fixedExpired": lambda: fixed_expired(base_url, broker),
            "otherErrors": lambda: other_errors(base_url, broker),
            "concurrent": lambda: concurrent(base_url, broker),
            "stream": lambda: stream(base_url, broker),
            "dpop": lambda: dpop(base_url, token),
        }
        report = {name: await check() for name, check in checks.items()}
    report["provider"] = provider_refusals()
    report["reasons"] = reasons()
    print(json.dumps(report))  # noqa: T201


asyncio.run(main(*sys.argv[1:]))
