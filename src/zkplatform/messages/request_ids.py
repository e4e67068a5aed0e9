"""A request's request id (AIP-155) and the fingerprint of what it asks.

Two calls with one request id are the same request when they ask the same thing: the same
method and the same value in every other field, whatever the encoding (JSON or binary) that
carried them. The fingerprint is the SHA-256 of the request message's name, which names the
method (one request message per RPC), and of its deterministic binary encoding without the id
and without fields this server does not know: a field added to a request later is covered
without anything here knowing of it. An update mask is a set of fields (AIP-134), whose paths
are encoded sorted, once each, and an empty one as none: what the update writes, not its spelling.
"""

from __future__ import annotations

import hashlib
from typing import TypeVar

from google.protobuf import field_mask_pb2
from google.protobuf.message import Message

from zkplatform.domain.request_ids import RequestId
from zkplatform_api.platform.v1 import broker_pb2, directory_pb2, vault_pb2

_FIELD_MASK = field_mask_pb2.FieldMask.DESCRIPTOR.full_name

# The requests that take a request id.
Nameable = TypeVar(
    "Nameable",
    vault_pb2.CreateItemRequest,
    vault_pb2.UpdateItemRequest,
    vault_pb2.DeleteItemRequest,
    broker_pb2.MintUserApiTokenRequest,
    broker_pb2.RevokeTokenRequest,
    directory_pb2.ResetPrincipalRequest,
)


def request_id_of(request: Nameable) -> RequestId | None:
    """The request's id and fingerprint; None without an id (the field's rule makes any id a UUID)."""
    if not request.request_id:
        return None
    asked = type(request)()
    asked.CopyFrom(request)
    asked.ClearField("request_id")
    # Fields this server does not know change nothing it does, and JSON drops them anyway.
    asked.DiscardUnknownFields()
    _masks_as_sets(asked)
    digest = hashlib.sha256(request.DESCRIPTOR.full_name.encode())
    digest.update(b"\n")
    digest.update(asked.SerializeToString(deterministic=True))
    # A UUID's hexadecimal digits in either case name the same UUID (RFC 4122).
    return RequestId(request.request_id.lower(), digest.digest())


def _masks_as_sets(request: Message) -> None:
    """Each FieldMask field of the request as its set of paths: sorted, once each, unset if empty."""
    for field in request.DESCRIPTOR.fields:
        kind = field.message_type
        if kind is None or kind.full_name != _FIELD_MASK or not request.HasField(field.name):
            continue
        paths = sorted(set(getattr(request, field.name).paths))
        request.ClearField(field.name)
        if paths:
            getattr(request, field.name).paths.extend(paths)
