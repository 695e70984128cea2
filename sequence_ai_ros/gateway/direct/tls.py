"""
The worker's self-signed certificate, made at start: clients pin it by its sha256 fingerprint.

A new key and certificate each start, so a gateway that restarts presents another one and a
client that pinned the old one refuses it, as a robot refuses a worker it was not sent to.
The private key lives only in a temporary directory of this process (mode 0700), removed at exit.
"""

from dataclasses import dataclass
import datetime
import hashlib
import ipaddress
import os
from pathlib import Path
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_FOR = datetime.timedelta(days=7)


@dataclass(frozen=True)
class WorkerCertificate:
    """Paths of the PEM certificate and key, and the certificate's sha256 fingerprint (hex)."""

    certfile: str
    keyfile: str
    fingerprint: str


def make_certificate(host: str, directory: str | None = None) -> WorkerCertificate:
    """Make a self-signed certificate for `host` (an address or a name) in a private directory."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'sequence-ai-ros local worker')])
    now = datetime.datetime.now(datetime.timezone.utc)
    try:
        alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        alt = x509.DNSName(host)
    certificate = (x509.CertificateBuilder()
                   .subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + VALID_FOR)
                   .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
                   .sign(key, hashes.SHA256()))
    folder = Path(directory or tempfile.mkdtemp(prefix='sequence-ai-ros-worker-'))
    os.chmod(folder, 0o700)
    certfile, keyfile = folder / 'worker.pem', folder / 'worker.key'
    certfile.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    keyfile.touch(mode=0o600)
    keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    der = certificate.public_bytes(serialization.Encoding.DER)
    return WorkerCertificate(str(certfile), str(keyfile), hashlib.sha256(der).hexdigest())
