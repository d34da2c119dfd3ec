"""The worker's self-signed certificate, made fresh at every (re)start.

The client pins the SHA-256 of the certificate's DER, so a new certificate is a new identity:
exactly what a worker restart looks like from outside.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import os
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class WorkerCertificate:
    certfile: str
    keyfile: str
    fingerprint: str  # sha256 hex of the DER, lower case, 64 chars


def make_certificate(directory: str, host: str = "127.0.0.1") -> WorkerCertificate:
    """Write a new key and self-signed certificate for `host` into `directory`."""
    # P-256 keys are made in microseconds; RSA would add a noticeable pause to each restart.
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sequences-local-worker")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False)
        .sign(key, hashes.SHA256())
    )
    der = cert.public_bytes(serialization.Encoding.DER)
    fingerprint = hashlib.sha256(der).hexdigest()
    certfile = os.path.join(directory, f"worker-{fingerprint[:12]}.pem")
    keyfile = os.path.join(directory, f"worker-{fingerprint[:12]}.key")
    with open(certfile, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    # The private key never leaves the temp directory, which only this user can read.
    fd = os.open(keyfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    return WorkerCertificate(certfile, keyfile, fingerprint)
