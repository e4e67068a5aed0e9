"""BrokerService: protobuf <-> the token use cases (minting, listing, revoking)."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain.broker import BrokerUseCases, MintRequest
from zkplatform.domain.models import Scope
from zkplatform.messages.convert import token_to_proto, tokens_response
from zkplatform.messages.request_ids import request_id_of
from zkplatform.rpc.call_auth import call_auth
from zkplatform_api.platform.v1 import broker_pb2
from zkplatform_api.platform.v1.broker_connect import BrokerService


class BrokerServicer(BrokerService):
    def __init__(self, use_cases: BrokerUseCases) -> None:
        self._use_cases = use_cases

    async def mint_user_api_token(
        self, request: broker_pb2.MintUserApiTokenRequest, ctx: RequestContext[Any, Any], /
    ) -> broker_pb2.MintUserApiTokenResponse:
        auth = call_auth(ctx)
        caller = auth.caller
        mint = MintRequest(
            tenant_id=request.tenant_id,
            scopes=tuple(Scope(scope) for scope in request.requested_scopes),  # known: validated by the proto rules
            ttl_seconds=request.requested_ttl_seconds,
            pop_key_id=request.pop_key_id,
            proof=auth.proof,
            request_id=request_id_of(request),
        )
        attempt = auth.mint_attempt
        if attempt is None:  # no CountMintAttempts before the body was read: the attempt counts all the same
            attempt = await self._use_cases.count_attempt(caller)
        issued = await self._use_cases.mint(caller, mint, attempt)
        response = broker_pb2.MintUserApiTokenResponse()
        token_to_proto(issued, caller.principal.role, response.token)  # in place: no copy of the token
        return response

    async def list_tokens(
        self, request: broker_pb2.ListTokensRequest, ctx: RequestContext[Any, Any], /
    ) -> broker_pb2.ListTokensResponse:
        page = await self._use_cases.management.list_tokens(
            call_auth(ctx).caller, request.principal_id, request.page_size, request.page_token
        )
        # Served by the Connect GET form too (NO_SIDE_EFFECTS): no cache may keep who holds which token.
        ctx.response_headers["cache-control"] = "no-store"
        return tokens_response(page)

    async def revoke_token(
        self, request: broker_pb2.RevokeTokenRequest, ctx: RequestContext[Any, Any], /
    ) -> broker_pb2.RevokeTokenResponse:
        revoked = await self._use_cases.management.revoke(
            call_auth(ctx).caller, request.token_id, request=request_id_of(request)
        )
        return broker_pb2.RevokeTokenResponse(revoked_token_ids=revoked)
