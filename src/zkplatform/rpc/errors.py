"""The one place that turns failures into Connect errors.

ErrorMapping is the first interceptor of every service, so its on_end sees the
failure of every later interceptor, of the body's decoding and of the servicer.
Domain errors get their code and google.rpc details here, and anything
unexpected becomes `internal` with a generic message, its details going only
to the server log.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext
from google.protobuf import duration_pb2
from google.rpc import error_details_pb2

from zkplatform.domain import errors as domain
from zkplatform.observability.calls import note_code
from zkplatform.rpc.details import error_detail

log = logging.getLogger(__name__)

# ErrorInfo.domain of every detail this service raises.
ERROR_DOMAIN: Final = "zkplatform"


def _info(reason: str, **metadata: str) -> error_details_pb2.ErrorInfo:
    return error_details_pb2.ErrorInfo(reason=reason, domain=ERROR_DOMAIN, metadata=metadata)


def to_connect_error(error: domain.DomainError) -> ConnectError:  # noqa: C901, PLR0911, PLR0912 # one arm per row
    """The Connect form of a domain error (the error table of docs/api.md)."""
    match error:
        case domain.RequestIdReused():
            violations = [
                error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
                for v in error.violations
            ]
            details = [
                error_detail(_info("REQUEST_ID_REUSED")),
                error_detail(error_details_pb2.BadRequest(field_violations=violations)),
            ]
            return ConnectError(Code.INVALID_ARGUMENT, str(error), details)
        case domain.InvalidArgument():
            violations = [
                error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
                for v in error.violations
            ]
            detail = error_details_pb2.BadRequest(field_violations=violations)
            return ConnectError(Code.INVALID_ARGUMENT, str(error), [error_detail(detail)])
        case domain.Unauthenticated():
            return ConnectError(Code.UNAUTHENTICATED, str(error))
        case domain.ScopesNotHeld():
            info = _info("SCOPES_NOT_HELD", refusedScopes=",".join(error.refused))
            return ConnectError(Code.PERMISSION_DENIED, str(error), [error_detail(info)])
        case domain.KeyAccessDenied():
            return ConnectError(Code.PERMISSION_DENIED, str(error), [error_detail(_info("KEY_ACCESS_DENIED"))])
        case domain.PermissionDenied():
            return ConnectError(Code.PERMISSION_DENIED, str(error))
        case domain.KeyNotFound():
            return ConnectError(Code.NOT_FOUND, str(error), [error_detail(_info("KEY_NOT_FOUND"))])
        case domain.NotFound():
            return ConnectError(Code.NOT_FOUND, str(error))
        case domain.KeyExists():
            return ConnectError(Code.ALREADY_EXISTS, str(error), [error_detail(_info("KEY_EXISTS"))])
        case domain.KeyRevoked():
            return ConnectError(Code.FAILED_PRECONDITION, str(error), [error_detail(_info("KEY_REVOKED"))])
        case domain.VersionMismatch():
            info = _info("VERSION_MISMATCH", currentVersion=str(error.current_version))
            return ConnectError(Code.ABORTED, str(error), [error_detail(info)])
        case domain.ItemExists():
            state = {"deleted": "true"} if error.deleted else {}
            info = _info("ITEM_EXISTS", currentVersion=str(error.current_version), **state)
            return ConnectError(Code.ALREADY_EXISTS, str(error), [error_detail(info)])
        case domain.TokenAlreadyMinted():
            info = _info("TOKEN_ALREADY_MINTED", tokenId=error.token_id)
            return ConnectError(Code.ALREADY_EXISTS, str(error), [error_detail(info)])
        case domain.ItemDeleted():
            info = _info("ITEM_DELETED")
            return ConnectError(Code.FAILED_PRECONDITION, str(error), [error_detail(info)])
        case domain.CursorExpired():
            # minSequence only below a purge horizon; the current epoch always (to start over in).
            below = {} if error.min_sequence is None else {"minSequence": str(error.min_sequence)}
            info = _info("CURSOR_EXPIRED", epoch=error.epoch, **below)
            return ConnectError(Code.FAILED_PRECONDITION, str(error), [error_detail(info)])
        case domain.CursorAhead():
            info = _info("CURSOR_AHEAD", currentSequence=str(error.current_sequence))
            return ConnectError(Code.OUT_OF_RANGE, str(error), [error_detail(info)])
        case domain.WatchBehind():
            return ConnectError(Code.ABORTED, str(error), [error_detail(_info("WATCH_BEHIND"))])
        case domain.ParentExpiresSoon():
            info = _info("PARENT_EXPIRES_SOON")
            return ConnectError(Code.FAILED_PRECONDITION, str(error), [error_detail(info)])
        case domain.LimitReached():
            retry = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=error.retry_after_seconds))
            return ConnectError(Code.RESOURCE_EXHAUSTED, str(error), [error_detail(retry)])
    log.error("no Connect mapping for domain error %s", type(error).__name__)
    return ConnectError(Code.INTERNAL, "internal error")


def connect_error_of(error: Exception, ctx: RequestContext[Any, Any]) -> ConnectError:
    """The Connect error a failure answers with, written into the call's record as the
    final code. A ConnectError stands; anything unexpected becomes `internal`, its
    details going only to the server log."""
    if isinstance(error, ConnectError):
        mapped = error
    elif isinstance(error, domain.DomainError):
        mapped = to_connect_error(error)
    else:
        log.error("unexpected failure in %s", ctx.method.name, exc_info=error)
        mapped = ConnectError(Code.INTERNAL, "internal error")
    note_code(mapped.code, mapped.message)
    return mapped


class ErrorMapping:
    """Metadata interceptor whose on_end sees, and replaces, every RPC's error, and
    writes the final code into the call's record (the access line, the metrics)."""

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        return None

    async def on_end(self, token: None, ctx: RequestContext[Any, Any], error: Exception | None, /) -> None:
        if error is None:
            return
        mapped = connect_error_of(error, ctx)
        if mapped is not error:
            raise mapped from error
