"""Google-generated descriptors, loaded into connectrpc's own protobuf runtime.

connectrpc renders error details and serves reflection with that runtime, so
the files our Google-generated code describes are loaded into it once, with
their dependencies.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FileDescriptor
from protobuf import DescFile
from protobuf._codegen._file import file_desc  # the loader generated code uses

from zkplatform.rpc.names import json_name


def load(file: FileDescriptor, *, json_names: bool = False, loaded: dict[str, DescFile] | None = None) -> DescFile:
    """The file (and its imports) in connectrpc's runtime. Google's descriptors
    carry no json_name; `json_names` fills them in, for rendering JSON."""
    loaded = {} if loaded is None else loaded
    if file.name not in loaded:
        dependencies = [load(dep, json_names=json_names, loaded=loaded) for dep in file.dependencies]
        proto = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(proto)
        if json_names:
            _fill_json_names(list(proto.message_type))
        loaded[file.name] = file_desc(proto.SerializeToString(), dependencies, {})
    return loaded[file.name]


def _fill_json_names(messages: list[descriptor_pb2.DescriptorProto]) -> None:
    for message in messages:
        for field in message.field:
            field.json_name = json_name(field.name)
        _fill_json_names(list(message.nested_type))
