"""Items as large as a request may make them: about 62 KB each once encoded, so that a default
page of 100 would be about 6.2 MB, beyond the 4 MiB a gRPC client takes by default."""

from __future__ import annotations

from zkplatform.domain.models import EncryptedPayload, ItemContent, WrappedKey
from zkplatform_api.platform.v1 import vault_pb2

CIPHERTEXT_CHARACTERS = 49_152  # the contract's most: 48 KiB of base64url
WRAPPED_KEY_CHARACTERS = 1024  # the contract's most for one wrapped key
RECIPIENTS = 12  # with the ciphertext, just under the 64 KiB request body limit (binary and JSON alike)
COUNT = 100  # a default page's worth
ID_FORMAT = "big-{:03}"  # before the development data set's item-1..6 in item_id order


def big_content(n: int) -> ItemContent:
    """Item n's content: distinct per item, each string at the contract's most (base64url)."""
    tag = f"{n:03}"
    return ItemContent(
        kind="file",
        title_hash=f"title{tag}",
        payload=EncryptedPayload(
            "A256GCM", f"nonce{tag}", "", (tag + "Q" * CIPHERTEXT_CHARACTERS)[-CIPHERTEXT_CHARACTERS:], 1
        ),
        wrapped_keys=tuple(
            WrappedKey(
                f"recipient-{k:02}", "ECDH-ES+A256KW", (tag + "K" * WRAPPED_KEY_CHARACTERS)[:WRAPPED_KEY_CHARACTERS]
            )
            for k in range(RECIPIENTS)
        ),
    )


def create_request(vault_id: str, n: int) -> vault_pb2.CreateItemRequest:
    """CreateItem of big item n in the vault: about 62 KB, under the 64 KiB body limit."""
    content = big_content(n)
    payload = content.payload
    return vault_pb2.CreateItemRequest(
        vault_id=vault_id,
        item_id=ID_FORMAT.format(n),
        kind=content.kind,
        title_hash=content.title_hash,
        encrypted_payload=vault_pb2.EncryptedPayload(
            alg=payload.alg, nonce=payload.nonce, aad=payload.aad, ciphertext=payload.ciphertext, version=1
        ),
        wrapped_keys=[
            vault_pb2.WrappedKey(recipient_id=k.recipient_id, wrap_alg=k.wrap_alg, wrapped_key=k.wrapped_key)
            for k in content.wrapped_keys
        ],
    )
