"""BrokerService: protobuf <-> the token-minting use case."""

from __future__ import annotations

from zkplatform_api.platform.v1.broker_connect import BrokerService


class BrokerServicer(BrokerService):
    """MintUserApiToken answers `unimplemented` until the broker use case lands."""
