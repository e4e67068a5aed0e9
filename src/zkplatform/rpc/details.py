"""google.rpc error details that render with a readable `debug` in Connect JSON.

connectrpc renders a detail's `debug` through its own protobuf runtime, which
needs a descriptor of the message. Google's generated descriptors carry no
json_name, so they are rebuilt once here with the proto3 JSON names filled in;
without that every key of `debug` comes out empty.
"""

from __future__ import annotations

from connectrpc.errors import ErrorDetail
from google.protobuf import descriptor_pb2
from google.protobuf.message import Message as GoogleMessage
from google.rpc import error_details_pb2
from protobuf import Registry
from protobuf._codegen._file import file_desc  # the loader generated code uses
from protobuf.wkt.google.protobuf import duration_pb

from zkplatform.rpc.names import json_name


def _with_json_names(
    messages: list[descriptor_pb2.DescriptorProto],
) -> None:
    for message in messages:
        for field in message.field:
            field.json_name = json_name(field.name)
        _with_json_names(list(message.nested_type))


def _registry() -> Registry:
    proto = descriptor_pb2.FileDescriptorProto()
    error_details_pb2.DESCRIPTOR.CopyToProto(proto)
    _with_json_names(list(proto.message_type))
    return Registry(file_desc(proto.SerializeToString(), [duration_pb.desc()], {}))


_REGISTRY = _registry()


def error_detail(message: GoogleMessage) -> ErrorDetail:
    """Wrap a google.rpc detail message for a ConnectError."""
    desc = _REGISTRY.message(message.DESCRIPTOR.full_name)
    if desc is None:
        msg = f"not a google.rpc error detail: {message.DESCRIPTOR.full_name}"
        raise ValueError(msg)
    return ErrorDetail(desc.type.from_binary(message.SerializeToString()))
