"""SSH keys: the lab's own client key and a pre-generated host key per guest.

The guest's host key is made here and handed to it in the seed, so the controller
knows it before first contact: strict checking, no trust on first use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


@dataclass(frozen=True)
class KeyPair:
    private_openssh: str
    public_openssh: str  # "ssh-ed25519 AAAA..."

    @classmethod
    def generate(cls, comment: str = "") -> KeyPair:
        key = Ed25519PrivateKey.generate()
        private = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        ).decode()
        public = (
            key.public_key()
            .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
            .decode()
        )
        return cls(private, f"{public} {comment}".strip())


def secure_dir(path: Path) -> Path:
    """Create ``path`` with mode 0700 and return it.

    Parents it has to make (the state directory) get 0755 whatever the umask: QEMU must
    traverse them to the guests' disks, and nobody else may write into them.
    """
    for directory in reversed([path, *path.parents]):
        if directory.exists():
            continue
        try:
            directory.mkdir()
        except FileExistsError:  # made meanwhile by someone else: theirs to set
            continue
        directory.chmod(0o755)
    os.chmod(path, 0o700)
    return path


def write_private(path: Path, text: str) -> None:
    """Write a secret so that it is never readable by others, not even for an instant.

    The text goes into a new file created with mode 0600 that then replaces ``path``: an
    existing file with a looser mode is never written into.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, 0o600)  # whatever the umask
    tmp.replace(path)


def lab_client_key(ssh_dir: Path) -> tuple[Path, str]:
    """The lab's SSH client key (created once): its private key path and public line."""
    secure_dir(ssh_dir)
    private = ssh_dir / "id_ed25519"
    public = ssh_dir / "id_ed25519.pub"
    if not private.exists() or not public.exists():
        pair = KeyPair.generate("lab-controller")
        write_private(private, pair.private_openssh)
        public.write_text(pair.public_openssh + "\n")
    return private, public.read_text().strip()
