"""How every worker serves its socket: TLS or not, the grace period of a stop, the listen backlog."""

from __future__ import annotations

import dataclasses
import ssl
from pathlib import Path

from zkplatform.config import DEFAULT_GRACEFUL_TIMEOUT, DEFAULT_LISTEN_BACKLOG, ConfigError


class _EncryptedKey(Exception):
    """Raised by _no_passphrase through OpenSSL, caught by Listener.check."""


def _no_passphrase() -> str:
    """What OpenSSL calls for an encrypted key's passphrase: the server never has one."""
    raise _EncryptedKey


@dataclasses.dataclass(frozen=True, slots=True)
class Listener:
    """How every worker serves its socket: TLS or not, the grace period of a stop, and how many
    connections its socket holds before they are accepted (listen's backlog)."""

    certfile: str | None = None
    keyfile: str | None = None
    graceful_timeout: float = DEFAULT_GRACEFUL_TIMEOUT
    backlog: int = DEFAULT_LISTEN_BACKLOG

    @property
    def scheme(self) -> str:
        return "https" if self.certfile is not None else "http"

    def check(self) -> None:
        """Load the certificate and key once, so that a bad pair stops the start, in one line."""
        if self.certfile is None or self.keyfile is None:
            return
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            # Without a password callback OpenSSL would ask for the passphrase on the terminal.
            context.load_cert_chain(self.certfile, self.keyfile, password=_no_passphrase)
        except _EncryptedKey:
            msg = (
                f"--keyfile {self.keyfile} is encrypted: the server needs the key unencrypted (e.g. "
                "`openssl pkey -in KEY -out PLAIN.pem`, readable only by the server's user)"
            )
            raise ConfigError(msg) from None
        except OSError as error:  # ssl.SSLError is one: a key that does not match, a file that is not PEM
            why = _tls_files_problem(self.certfile, self.keyfile) or error.strerror or getattr(error, "reason", None)
            msg = f"cannot serve TLS with --certfile {self.certfile} and --keyfile {self.keyfile} ({why or error})"
            raise ConfigError(msg) from None


def _tls_files_problem(certfile: str, keyfile: str) -> str | None:
    """What is wrong with the pair, in words, when the PEM blocks in the files tell (OpenSSL only says "PEM lib")."""
    try:
        cert, key = Path(certfile).read_text(errors="replace"), Path(keyfile).read_text(errors="replace")
    except OSError:
        return None  # OpenSSL's own reason (no such file, permission denied) says it
    if "PRIVATE KEY-----" in cert and "-----BEGIN CERTIFICATE-----" in key:
        return "the two are swapped: --certfile names the private key and --keyfile the certificate"
    if "-----BEGIN CERTIFICATE-----" not in cert:
        return "--certfile holds no PEM certificate"
    if "PRIVATE KEY-----" not in key:
        return "--keyfile holds no PEM private key"
    return None
