"""google.rpc error details that render with a readable `debug` in Connect JSON.

connectrpc renders a detail's `debug` through its own protobuf runtime, which
needs a descriptor of the message with its JSON names (rpc/encoding/descriptors.py).
"""

from __future__ import annotations

from connectrpc.errors import ErrorDetail
from google.protobuf.message import Message as GoogleMessage
from google.rpc import error_details_pb2
from protobuf import Registry

from zkplatform.rpc.encoding.descriptors import load

# Without json names every key of `debug` would come out empty.
_REGISTRY = Registry(load(error_details_pb2.DESCRIPTOR, json_names=True))


def error_detail(message: GoogleMessage) -> ErrorDetail:
    """Wrap a google.rpc detail message for a ConnectError."""
    desc = _REGISTRY.message(message.DESCRIPTOR.full_name)
    if desc is None:
        msg = f"not a google.rpc error detail: {message.DESCRIPTOR.full_name}"
        raise ValueError(msg)
    return ErrorDetail(desc.type.from_binary(message.SerializeToString()))
