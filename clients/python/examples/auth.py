"""Authorize every call: with a fixed token, then with a provider that mints short-lived ones.

python auth.py BASE_URL TOKEN
"""

import asyncio
import json
import sys

from zkplatform_api.platform.v1.broker_pb2 import MintUserApiTokenRequest
from zkplatform_api.platform.v1.vault_pb2 import GetItemRequest, ListItemsRequest
from zkplatform_client import clients


async def main(base_url: str, token: str) -> None:
    # A fixed token: every call carries `Authorization: Bearer <token>`.
    async with clients(base_url, token=token) as platform:
        listed = await platform.vault.list_items(ListItemsRequest(vault_id="acme-shared"))

        # A provider: a function, plain or async, that returns a fresh token. This one mints
        # read-only tokens that live 60 s. When a call finds its token expired, the provider is
        # asked for another and the call is made once more with it (unary calls; never twice).
        async def read_only_token() -> str:
            request = MintUserApiTokenRequest(
                tenant_id="acme", requested_scopes=["vault.items.read"], requested_ttl_seconds=60
            )
            return (await platform.broker.mint_user_api_token(request)).token.access_token

        async with clients(base_url, token=read_only_token) as reader:
            got = await reader.vault.get_item(GetItemRequest(vault_id="acme-shared", item_id="item-2"))

    print(json.dumps({"listed": len(listed.items), "read": got.item.item_id}))


asyncio.run(main(*sys.argv[1:]))
