"""The key directory's domain values <-> protobuf messages (directory.proto)."""

from __future__ import annotations

import base64

from zkplatform.domain.key_directory import IndexedEntry, KeyAnswer, KeyLogPage, RecipientKeys
from zkplatform.domain.key_log import KeyLogAction, KeyLogHead
from zkplatform.domain.recipient_keys import RecipientKey
from zkplatform_api.platform.v1 import directory_pb2

_ACTIONS = {
    KeyLogAction.PUBLISHED: directory_pb2.KEY_LOG_ACTION_PUBLISHED,
    KeyLogAction.REVOKED: directory_pb2.KEY_LOG_ACTION_REVOKED,
}


def b64url(data: bytes) -> str:
    """Bytes as the contract writes them: base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def key_to_proto(key: RecipientKey, message: directory_pb2.RecipientKey) -> None:
    message.key_id = key.key_id
    message.tenant_id = key.tenant_id
    message.principal_id = key.principal_id
    message.jwk = key.jwk
    message.created_at.seconds = key.created_at
    if key.revoked_at is not None:
        message.revoked_at.seconds = key.revoked_at


def head_to_proto(head: KeyLogHead, message: directory_pb2.KeyLogHead) -> None:
    message.size = head.size
    message.hash = b64url(head.hash)


def entry_to_proto(indexed: IndexedEntry, message: directory_pb2.KeyLogEntry) -> None:
    entry = indexed.entry
    message.index = indexed.index
    message.action = _ACTIONS[entry.action]
    message.tenant_id = entry.tenant_id
    message.principal_id = entry.principal_id
    message.key_id = entry.key_id
    message.jwk = entry.jwk
    message.time.seconds = entry.time
    message.hash = b64url(indexed.hash)


def publish_response(answer: KeyAnswer) -> directory_pb2.PublishKeyResponse:
    response = directory_pb2.PublishKeyResponse()
    key_to_proto(answer.key, response.key)
    head_to_proto(answer.head, response.log_head)
    return response


def revoke_response(answer: KeyAnswer) -> directory_pb2.RevokeKeyResponse:
    response = directory_pb2.RevokeKeyResponse()
    key_to_proto(answer.key, response.key)
    head_to_proto(answer.head, response.log_head)
    return response


def recipient_keys_response(found: RecipientKeys) -> directory_pb2.GetRecipientKeysResponse:
    response = directory_pb2.GetRecipientKeysResponse()
    add = response.keys.add
    for key in found.keys:
        key_to_proto(key, add())
    head_to_proto(found.head, response.log_head)
    return response


def key_log_response(page: KeyLogPage) -> directory_pb2.ListKeyLogResponse:
    response = directory_pb2.ListKeyLogResponse(next_page_token=page.next_page_token)
    add = response.entries.add
    for indexed in page.entries:
        entry_to_proto(indexed, add())
    head_to_proto(page.head, response.log_head)
    return response
