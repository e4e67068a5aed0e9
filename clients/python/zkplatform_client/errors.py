"""What a failed call says, as data: its reason, metadata, field violations and when to try again.

Every error of the server carries exactly one google.rpc.ErrorInfo of domain `zkplatform.dev`,
whose reason is the name of an `ErrorReason` value (errors.proto); `invalid_argument` also carries
a google.rpc.BadRequest, `resource_exhausted` and `unavailable` a google.rpc.RetryInfo.

    try:
        await vault.update_item(request)
    except ConnectError as error:
        details = error_details(error)
        if details.reason_is(ErrorReason.VERSION_MISMATCH):
            current = int(details.metadata["currentVersion"])

connectrpc 0.13 decodes details with its own protobuf runtime, which the generated messages (of
Google's protobuf) are not: `detail.value(ErrorInfo)` fails there. These helpers decode each
detail's bytes instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, NamedTuple

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.rpc.error_details_pb2 import BadRequest, ErrorInfo, RetryInfo

from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

# ErrorInfo.domain of the platform's errors.
ERROR_DOMAIN: Final = "zkplatform.dev"
_ERROR_INFO: Final = "google.rpc.ErrorInfo"
_BAD_REQUEST: Final = "google.rpc.BadRequest"
_RETRY_INFO: Final = "google.rpc.RetryInfo"


class FieldViolation(NamedTuple):
    """One entry of a BadRequest: the field (a path in lowerCamelCase, "" for the request as a
    whole) and what is wrong with it."""

    field: str
    description: str


@dataclass(frozen=True)
class ErrorDetails:
    """A failed call's code and message, and the details the platform's errors carry.

    `reason`: the ErrorInfo's reason (the name of an ErrorReason value), None when the error has no
    ErrorInfo of the platform (a network failure, a proxy's answer). `metadata`: the ErrorInfo's
    metadata (`currentVersion`, `requiredScope`, `limit`...). `violations`: the BadRequest's field
    violations (`invalid_argument`). `retry_after`: the RetryInfo's delay in seconds, None without
    one (`resource_exhausted` and `unavailable` have one)."""

    code: Code
    message: str
    reason: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    violations: list[FieldViolation] = field(default_factory=list)
    retry_after: float | None = None

    def reason_is(self, reason: ErrorReason | int) -> bool:
        """Whether the reason is that ErrorReason value: `details.reason_is(ErrorReason.ITEM_EXISTS)`."""
        return self.reason is not None and self.reason == ErrorReason.Name(reason)


def error_details(error: ConnectError) -> ErrorDetails:
    """The reason, metadata, field violations and retry delay of a failed call."""
    reason: str | None = None
    metadata: dict[str, str] = {}
    violations: list[FieldViolation] = []
    retry_after: float | None = None
    for detail in error.details:
        kind = detail.type_name
        if kind == _ERROR_INFO and reason is None:
            info = ErrorInfo.FromString(detail.message_bytes)
            if info.domain == ERROR_DOMAIN:
                reason, metadata = str(info.reason), dict(info.metadata)
        elif kind == _BAD_REQUEST:
            bad = BadRequest.FromString(detail.message_bytes)
            violations.extend(FieldViolation(str(v.field), str(v.description)) for v in bad.field_violations)
        elif kind == _RETRY_INFO and retry_after is None:
            delay = RetryInfo.FromString(detail.message_bytes).retry_delay
            retry_after = max(delay.seconds + delay.nanos / 1e9, 0.0)
    return ErrorDetails(error.code, error.message, reason, metadata, violations, retry_after)


def error_reason(error: ConnectError) -> str | None:
    """The reason of the platform's ErrorInfo, if the error carries one: every error of the server
    does, a failure of the network or of a proxy does not. Compare it with
    `ErrorReason.Name(ErrorReason.CURSOR_EXPIRED)`, or use `error_details(error).reason_is(...)`."""
    return error_details(error).reason
