"""error_details of the Python package on the refusals the errors example does not provoke; prints
one JSON report (error_checks.ts prints the same with the npm package).

    python error_checks.py BASE_URL TOKEN

The server must let tokens live 1 s (ZKPLATFORM_TOKEN_TTL_MIN=1) and allow few mints a minute
(ZKPLATFORM_MINT_RATE_PER_MINUTE), so that minting until refused is cheap.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from connectrpc.errors import ConnectError

from zkplatform_api.platform.v1.broker_pb2 import MintUserApiTokenRequest
from zkplatform_api.platform.v1.vault_pb2 import GetItemRequest
from zkplatform_client import ErrorReason, clients, error_details

DEADLINE_S = 15.0  # bounds the wait for a token to expire, and the mints until refused


def described(error: ConnectError) -> dict[str, Any]:
    details = error_details(error)
    return {
        "code": details.code.value,
        "reason": details.reason,
        "metadata": details.metadata,
        "violations": [list(v) for v in details.violations],
        "retryAfter": details.retry_after is not None and 0 < details.retry_after <= 60,
    }


async def main(base_url: str, token: str) -> dict[str, Any]:
    report: dict[str, Any] = {}
    async with clients(base_url, token=token) as platform:
        mint = MintUserApiTokenRequest(tenant_id="acme", requested_scopes=["vault.items.read"], requested_ttl_seconds=1)
        short = (await platform.broker.mint_user_api_token(mint)).token.access_token
        async with clients(base_url, token=short) as reader:
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline:  # until the server says it expired
                try:
                    await reader.vault.get_item(GetItemRequest(vault_id="acme-shared", item_id="item-2"))
                except ConnectError as error:
                    report["expired"] = described(error)
                    report["expiredIs"] = error_details(error).reason_is(ErrorReason.TOKEN_EXPIRED)
                    break
                await asyncio.sleep(0.2)
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:  # until the mint rate is reached
            try:
                await platform.broker.mint_user_api_token(mint)
            except ConnectError as error:
                report["rateLimited"] = described(error)
                break
    async with clients("http://127.0.0.1:1", token=token) as nowhere:  # no server: no ErrorInfo
        try:
            await nowhere.vault.get_item(GetItemRequest(vault_id="acme-shared", item_id="item-2"))
        except ConnectError as error:
            report["network"] = described(error)
    return report


sys.stdout.write(json.dumps(asyncio.run(main(*sys.argv[1:]))) + "\n")
