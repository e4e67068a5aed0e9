"""Proto field names as JSON callers see them."""


def json_name(field_name: str) -> str:
    """The proto3 JSON name of a field (lowerCamelCase of its snake_case name)."""
    head, *rest = field_name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)
