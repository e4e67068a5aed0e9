"""Domain values <-> protobuf messages."""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp

from zkplatform.domain import models
from zkplatform.domain.issuing import IssuedToken
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2


def timestamp(unix_seconds: int) -> Timestamp:
    return Timestamp(seconds=unix_seconds)


def item_to_proto(item: models.Item) -> vault_pb2.Item:
    message = vault_pb2.Item(
        item_id=item.item_id,
        tenant_id=item.tenant_id,
        vault_id=item.vault_id,
        version=item.version,
        kind=item.kind,
        title_hash=item.title_hash,
        updated_at=timestamp(item.updated_at),
        wrapped_keys=[
            vault_pb2.WrappedKey(recipient_id=k.recipient_id, wrap_alg=k.wrap_alg, wrapped_key=k.wrapped_key)
            for k in item.wrapped_keys
        ],
        deleted=item.deleted,
    )
    if (payload := item.payload) is not None:
        message.encrypted_payload.CopyFrom(
            vault_pb2.EncryptedPayload(
                alg=payload.alg,
                nonce=payload.nonce,
                aad=payload.aad,
                ciphertext=payload.ciphertext,
                version=payload.version,
            )
        )
    return message


def item_from_proto(message: vault_pb2.Item) -> models.Item:
    payload = None
    if message.HasField("encrypted_payload"):
        p = message.encrypted_payload
        payload = models.EncryptedPayload(p.alg, p.nonce, p.aad, p.ciphertext, p.version)
    return models.Item(
        item_id=message.item_id,
        tenant_id=message.tenant_id,
        vault_id=message.vault_id,
        version=message.version,
        kind=message.kind,
        title_hash=message.title_hash,
        updated_at=message.updated_at.seconds,
        payload=payload,
        wrapped_keys=tuple(models.WrappedKey(k.recipient_id, k.wrap_alg, k.wrapped_key) for k in message.wrapped_keys),
        deleted=message.deleted,
    )


def delete_response(tombstone: models.Tombstone) -> vault_pb2.DeleteItemResponse:
    return vault_pb2.DeleteItemResponse(
        item=item_to_proto(tombstone.item),
        cursor=vault_pb2.Cursor(vault_id=tombstone.item.vault_id, sequence=tombstone.sequence),
    )


_ROLES = {
    models.Role.OWNER: broker_pb2.ROLE_OWNER,
    models.Role.ADMIN: broker_pb2.ROLE_ADMIN,
    models.Role.MEMBER: broker_pb2.ROLE_MEMBER,
    models.Role.SERVICE: broker_pb2.ROLE_SERVICE,
}


def token_to_proto(issued: IssuedToken, role: models.Role) -> broker_pb2.Token:
    record = issued.record
    return broker_pb2.Token(
        access_token=issued.secret,
        token_id=record.token_id,
        tenant_id=record.tenant_id,
        principal_id=record.principal_id,
        scopes=sorted(record.scopes),
        role=_ROLES[role],
        pop_key_id=record.pop_key_id,
        issued_at=timestamp(record.issued_at),
        expires_at=timestamp(record.expires_at),
    )
