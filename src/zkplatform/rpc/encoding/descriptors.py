"""Google-generated descriptors, loaded into connectrpc's own protobuf runtime.

connectrpc renders error details and serves reflection with that runtime, so
the files our Google-generated code describes are loaded into it once, with
their dependencies.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FileDescriptor
from protobuf import DescFile

from zkplatform.rpc.internals import file_desc


def load(file: FileDescriptor, *, json_names: bool = False, loaded: dict[str, DescFile] | None = None) -> DescFile:
    """The file (and its imports) in connectrpc's runtime. A descriptor copied to
    a proto carries no json_name; `json_names` fills them in, for rendering JSON."""
    loaded = {} if loaded is None else loaded
    if file.name not in loaded:
        dependencies = [load(dep, json_names=json_names, loaded=loaded) for dep in file.dependencies]
        proto = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(proto)
        if json_names:
            for message in proto.message_type:
                _fill_json_names(message, file.message_types_by_name[message.name])
        loaded[file.name] = file_desc(proto.SerializeToString(), dependencies, {})
    return loaded[file.name]


def _fill_json_names(proto: descriptor_pb2.DescriptorProto, descriptor: Descriptor) -> None:
    for field in proto.field:
        field.json_name = descriptor.fields_by_name[field.name].json_name
    for nested in proto.nested_type:
        _fill_json_names(nested, descriptor.nested_types_by_name[nested.name])
