"""How the operator's list commands print: one JSON object a line, or an aligned table.

Never a token's secret nor its hash: tokens are shown as the API's TokenInfo,
which has neither.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from google.protobuf import json_format

from zkplatform.domain.models import Principal, Role, Tenant, TokenRecord, Vault
from zkplatform.messages.convert import token_info_to_proto

Row = Mapping[str, object]


def tenant_row(tenant: Tenant) -> Row:
    return {"tenantId": tenant.tenant_id}


def principal_row(principal: Principal) -> Row:
    return {
        "principalId": principal.principal_id,
        "tenantId": principal.tenant_id,
        "role": principal.role.value,
        "scopes": sorted(principal.scopes),
        "disabled": principal.disabled,
    }


def vault_row(vault: Vault) -> Row:
    return {"vaultId": vault.vault_id, "tenantId": vault.tenant_id, "members": sorted(vault.members)}


def token_row(record: TokenRecord, role: Role, now: int) -> Row:
    """The token as ListTokens shows it (proto3 JSON), and whether it still works."""
    info = json_format.MessageToDict(token_info_to_proto(record, role))
    state = "revoked" if record.revoked else "expired" if now >= record.expires_at else "live"
    return {**info, "state": state}


def render(rows: Iterable[Row], *, table: bool, columns: Sequence[str]) -> str:
    """One JSON object a line; or, with `table`, the columns aligned under a header."""
    rows = list(rows)
    if not table:
        return "\n".join(json.dumps(row, separators=(",", ":")) for row in rows)
    cells = [[_cell(row.get(column, "")) for column in columns] for row in rows]
    widths = [max([len(column)] + [len(line[i]) for line in cells]) for i, column in enumerate(columns)]
    lines = [list(columns), *cells]
    return "\n".join(
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ",".join(map(str, value)) or "-"
    return str(value) if value != "" else "-"
