"""TLS with a private CA: trust the CA that signed the server's certificate, over gRPC and Connect.

python tls.py BASE_URL TOKEN CA_FILE
"""

import asyncio
import json
import sys
from pathlib import Path

from zkplatform_api.platform.v1.vault_pb2 import ListItemsRequest
from zkplatform_client import clients


async def main(base_url: str, token: str, ca_file: str) -> None:
    ca = Path(ca_file)  # or the PEM bytes; trusted instead of the system's CAs
    listed = {}
    for protocol in ("grpc", "connect-binary"):
        # gRPC is HTTP/2; Connect takes the version ALPN agrees on, or http_version="2" or "1.1".
        async with clients(base_url, protocol, token=token, ca=ca) as platform:
            page = await platform.vault.list_items(ListItemsRequest(vault_id="acme-shared"))
            listed[protocol] = len(page.items)

    print(json.dumps({"listed": listed}))


asyncio.run(main(*sys.argv[1:]))
