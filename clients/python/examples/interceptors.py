"""Interceptors of your own beside the auth one, on a client built directly.

python interceptors.py BASE_URL TOKEN
"""

import asyncio
import contextlib
import json
import sys
from typing import Any

from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext

from zkplatform_api.platform.v1.vault_connect import VaultServiceClient
from zkplatform_api.platform.v1.vault_pb2 import GetItemRequest
from zkplatform_client import AuthInterceptor


class CallLog:
    """A connectrpc metadata interceptor: it sees every call, of every kind, start and end."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        return None

    async def on_end(self, _: None, ctx: RequestContext[Any, Any], error: Exception | None) -> None:
        code = error.code.name.lower() if isinstance(error, ConnectError) else "ok" if error is None else "error"
        # Interceptors listed before the auth one never see the token.
        self.lines.append({"rpc": ctx.method.name, "code": code, "sawToken": "authorization" in ctx.request_headers})


async def main(base_url: str, token: str) -> None:
    log = CallLog()
    async with VaultServiceClient(base_url, interceptors=[log, AuthInterceptor(token)]) as vault:
        await vault.get_item(GetItemRequest(vault_id="acme-shared", item_id="item-3"), use_get=True)
        with contextlib.suppress(ConnectError):  # not_found: logged all the same
            await vault.get_item(GetItemRequest(vault_id="acme-shared", item_id="no-such-item"))

    print(json.dumps({"calls": log.lines}))


asyncio.run(main(*sys.argv[1:]))
