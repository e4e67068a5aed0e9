"""A request's request id (AIP-155) and the fingerprint of what it asks.

Two calls with one request id are the same request when they ask the same thing: the same
method and the same value in every other field, whatever the encoding (JSON or binary) that
carried them. The fingerprint is the SHA-256 of the request message's name, which names the
method (one request message per RPC), and of its deterministic binary encoding without the id
and without fields this server does not know: a field added to a request later is covered
without anything here knowing of it.
"""

from __future__ import annotations

import hashlib
from typing import TypeVar

from zkplatform.domain.request_ids import RequestId
from zkplatform_api.platform.v1 import broker_pb2, directory_pb2, vault_pb2

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
    digest = hashlib.sha256(request.DESCRIPTOR.full_name.encode())
    digest.update(b"\n")
    digest.update(asked.SerializeToString(deterministic=True))
    # A UUID's hexadecimal digits in either case name the same UUID (RFC 4122).
    return RequestId(request.request_id.lower(), digest.digest())
