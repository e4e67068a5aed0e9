"""A key-bound token (DPoP): mint one bound to a new key, then call with it, by POST and by GET.

python dpop.py BASE_URL TOKEN ITEM_ID
"""

import asyncio
import json
import sys

from zkplatform_api.platform.v1.broker_pb2 import MintUserApiTokenRequest
from zkplatform_api.platform.v1.vault_pb2 import CreateItemRequest, EncryptedPayload, GetItemRequest, WrappedKey
from zkplatform_client import DPoPKey, clients


async def main(base_url: str, token: str, item_id: str) -> None:
    # An EC P-256 key (ES256). Keep key.private_jwk() to use it again: DPoPKey.from_jwk(saved).
    key = DPoPKey.generate()

    # The mint proves the key too: with dpop=key every call carries a proof of it.
    async with clients(base_url, token=token, dpop=key) as platform:
        request = MintUserApiTokenRequest(
            tenant_id="acme", requested_scopes=["vault.items.read", "vault.items.write"], pop_key_id=key.thumbprint
        )
        bound = (await platform.broker.mint_user_api_token(request)).token

    # The bound token goes as `Authorization: DPoP <token>` with a fresh proof on every call:
    # htm POST, or GET for the Connect GET form (use_get=True); htu the URL without its query.
    async with clients(base_url, token=bound.access_token, dpop=key) as platform:
        created = await platform.vault.create_item(
            CreateItemRequest(
                vault_id="acme-shared",
                item_id=item_id,
                kind="note",
                encrypted_payload=EncryptedPayload(alg="A256GCM", nonce="bm9uY2U", ciphertext="c2VjcmV0"),
                wrapped_keys=[WrappedKey(recipient_id="alice", wrap_alg="A256KW", wrapped_key="a2V5")],
            )
        )
        got = await platform.vault.get_item(GetItemRequest(vault_id="acme-shared", item_id=item_id), use_get=True)

    print(
        json.dumps(
            {
                "bound": bound.pop_key_id == key.thumbprint,
                "created": str(created.item.version),
                "got": str(got.item.version),
            }
        )
    )


asyncio.run(main(*sys.argv[1:]))
