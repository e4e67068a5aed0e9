"""A buf image (`buf build -o`) read with google.protobuf, and the protovalidate rules in it.

Shared by the contract gate (check_rules.py) and the API reference (gen_reference.py).
An image carries every file it needs, buf/validate/validate.proto and the contract's own
predefined rules (strings.proto) included. So each image gets a DescriptorPool of its own,
and its options are parsed with that pool's classes: the rules of two versions of the
contract never mix, and a predefined rule is read like any other.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory, text_encoding, text_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

# The protovalidate extension of each kind of options (validate.proto: `extend ... = 1159`).
RULES_EXTENSION = {
    "google.protobuf.FieldOptions": "buf.validate.field",
    "google.protobuf.MessageOptions": "buf.validate.message",
    "google.protobuf.OneofOptions": "buf.validate.oneof",
}
FIELD_BEHAVIOR = "google.api.field_behavior"

# A flattened rule set: "string.max_len" -> 64, "cel[id]" -> Rule, "repeated.items.string.in" -> (...).
Rules = dict[str, object]


class Image:
    def __init__(self, files: descriptor_pb2.FileDescriptorSet) -> None:
        self.files = list(files.file)
        self.pool = descriptor_pool.DescriptorPool()
        for file in self.files:
            self.pool.Add(file)

    @classmethod
    def load(cls, path: str | Path) -> Image:
        """A binary image, or a JSON one (by its suffix); `-` reads a binary image from stdin."""
        files = descriptor_pb2.FileDescriptorSet()
        if str(path) == "-":
            files.ParseFromString(sys.stdin.buffer.read())
        elif str(path).endswith(".json"):
            # Options extensions in JSON (`"[buf.validate.field]": ...`) parse only with a class that
            # knows them: read the descriptors without them first, then again with the classes of their
            # own pool. buf's own image extension (which files are imports) is left out both times.
            text = Path(path).read_text(encoding="utf-8")
            json_format.Parse(text, files, ignore_unknown_fields=True)
            with_options = message_factory.GetMessageClass(
                cls(files).pool.FindMessageTypeByName(files.DESCRIPTOR.full_name)
            )
            files = descriptor_pb2.FileDescriptorSet.FromString(
                json_format.Parse(text, with_options(), ignore_unknown_fields=True).SerializeToString()
            )
        else:
            files.ParseFromString(Path(path).read_bytes())
        return cls(files)

    def message(self, full_name: str) -> Descriptor | None:
        try:
            return self.pool.FindMessageTypeByName(full_name)
        except KeyError:
            return None

    def _reparsed(self, options: Message) -> Message:
        """The options again, parsed with this image's classes, so that its extensions are known."""
        cls = message_factory.GetMessageClass(self.pool.FindMessageTypeByName(options.DESCRIPTOR.full_name))
        return cls.FromString(options.SerializeToString())

    def _extension(self, name: str) -> Any:
        """The extension of that name in this image, or None. (Any: the stubs know only generated ones.)"""
        try:
            return self.pool.FindExtensionByName(name)
        except KeyError:
            return None

    def rules(self, options: Message) -> Rules:
        """The protovalidate rules in field, message or oneof options, flattened (see flatten)."""
        extension = self._extension(RULES_EXTENSION[options.DESCRIPTOR.full_name])
        if extension is None:
            return {}
        parsed = self._reparsed(options)
        return flatten(parsed.Extensions[extension]) if parsed.HasExtension(extension) else {}

    def field_behavior(self, options: Message) -> list[str]:
        """The names of the field's `google.api.field_behavior` values, when the image has them."""
        extension = self._extension(FIELD_BEHAVIOR)
        if extension is None or extension.enum_type is None:
            return []
        values = extension.enum_type.values_by_number
        return [values[int(number)].name for number in self._reparsed(options).Extensions[extension]]


def flatten(rules: Message, prefix: str = "") -> Rules:
    """One entry per rule, keyed by its path as written in a .proto file.

    Nested rule messages (`string`, `repeated.items`, `map.values`...) become path prefixes;
    CEL rules are keyed by their id (`cel[id]`), message oneof rules by their fields
    (`oneof[a,b]`); predefined rules by their extension name (`string.[platform.v1.no_nul]`).
    A repeated value becomes a tuple; an enum value its name; any other message stays a message.
    """
    flat: Rules = {}
    for field, value in rules.ListFields():
        name = f"[{field.full_name}]" if field.is_extension else field.name
        path = prefix + name
        if field.message_type is not None and field.message_type.full_name == "buf.validate.Rule":
            for rule in value if field.is_repeated else [value]:
                flat[f"{path}[{rule.id or rule.expression}]"] = rule
        elif field.message_type is not None and field.message_type.full_name == "buf.validate.MessageOneofRule":
            for rule in value:
                key = f"{path}[{','.join(rule.fields)}]"
                flat[key] = True
                if rule.required:
                    flat[f"{key}.required"] = True
        elif field.message_type is not None and field.message_type.full_name.startswith("buf.validate."):
            flat.update(flatten(value, path + "."))
        elif field.is_repeated:
            flat[path] = tuple(_scalar(field, item) for item in value)
        else:
            flat[path] = _scalar(field, value)
    return flat


class EnumName(str):
    """An enum value's name, shown bare rather than quoted."""

    __slots__ = ()


def _scalar(field: FieldDescriptor, value: object) -> object:
    if field.enum_type is not None and isinstance(value, int):
        number = field.enum_type.values_by_number.get(value)
        return EnumName(number.name) if number is not None else value
    return value


def show(value: object) -> str:  # noqa: PLR0911 (one return per kind of value)
    """A rule's value as it would be written in a .proto file: `64`, `"^[a-z]+$"`, `["a", "b"]`, `true`."""
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, EnumName):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bytes):
        return f'"{text_encoding.CEscape(value, as_utf8=False)}"'
    if isinstance(value, tuple):
        return "[" + ", ".join(show(item) for item in value) + "]"
    if isinstance(value, Message):
        if value.DESCRIPTOR.full_name == "buf.validate.Rule":
            return show(value.expression)  # type: ignore[attr-defined]
        return "{" + text_format.MessageToString(value, as_one_line=True) + "}"
    return str(value)
