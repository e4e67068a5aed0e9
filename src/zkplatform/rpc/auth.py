"""Authentication at the edge of every RPC, before the body is parsed.

The contract's order: a token in the URL's query is refused (and revoked)
first, then the Authorization header must carry a live token, with a DPoP
proof when the token is key-bound. The caller and the request's proof are
then available to servicers through `current_caller()` and `current_proof()`.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain.auth import Authenticator, Caller
from zkplatform.domain.dpop import ProofRequest
from zkplatform.domain.errors import Unauthenticated
from zkplatform.rpc.edge import request_facts
from zkplatform.rpc.metadata import StartCheck

_caller: ContextVar[Caller] = ContextVar("caller")
_proof: ContextVar[ProofRequest] = ContextVar("proof")


def current_caller() -> Caller:
    """The authenticated caller of the RPC being served."""
    return _caller.get()


def current_proof() -> ProofRequest:
    """The DPoP proof the RPC being served carried, with the request it must describe."""
    return _proof.get()


class Authenticate(StartCheck):
    """Metadata interceptor; connectrpc runs it in the task that then runs the handler."""

    def __init__(self, authenticator: Authenticator) -> None:
        self._authenticator = authenticator

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        facts = request_facts.get()
        if facts.query_string:
            await self._authenticator.refuse_tokens_in_query(facts.query_string.decode("latin-1"))
        proofs = ctx.request_headers.getall("dpop")
        if len(proofs) > 1:
            raise Unauthenticated("DPoP proof: more than one DPoP header")
        proof = ProofRequest(proof=proofs[0] if proofs else None, htm=ctx.http_method, htu=facts.url)
        _proof.set(proof)
        _caller.set(await self._authenticator.authenticate(ctx.request_headers.get("authorization"), proof))
