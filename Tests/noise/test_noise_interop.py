"""Interop of the Swift Noise module with Python's `noiseprotocol` (an independent
implementation): XX, IK and XXpsk3 handshakes with Swift as initiator and as responder, then
transport messages both ways, rekeying, and tampering that must be refused."""

from __future__ import annotations

import os

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from noise_support import SwiftPeer

PROTOCOLS = ["Noise_XX_25519_ChaChaPoly_SHA256", "Noise_IK_25519_ChaChaPoly_SHA256",
             "Noise_XXpsk3_25519_ChaChaPoly_SHA256"]
HANDSHAKE_MESSAGES = {"XX": 3, "IK": 2, "XXpsk3": 3}
PROLOGUE = b"ordersync interop"


def public_key(private: bytes) -> bytes:
    return X25519PrivateKey.from_private_bytes(private).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def make_pair(connection, binary, protocol: str, swift_role: str, *, swift_psk: bytes | None = None):
    """A Swift peer and a Python `NoiseConnection` set up for `protocol`, handshake not run."""
    pattern = protocol.split("_")[1]
    swift_static, python_static = os.urandom(32), os.urandom(32)
    psk = os.urandom(32)
    swift_initiates = swift_role == "initiator"
    swift_remote = public_key(python_static) if pattern == "IK" and swift_initiates else None
    swift = SwiftPeer(binary, protocol, swift_role, prologue=PROLOGUE, static=swift_static,
                      remote_static=swift_remote, psks=[swift_psk or psk] if "psk" in pattern else [])
    assert swift.public_static == public_key(swift_static)

    python = connection.NoiseConnection.from_name(protocol.encode())
    python.set_as_responder() if swift_initiates else python.set_as_initiator()
    python.set_prologue(PROLOGUE)
    python.set_keypair_from_private_bytes(connection.Keypair.STATIC, python_static)
    if pattern == "IK" and not swift_initiates:
        python.set_keypair_from_public_bytes(connection.Keypair.REMOTE_STATIC, public_key(swift_static))
    if "psk" in pattern:
        python.set_psks(psk=psk)
    python.start_handshake()
    return swift, python, public_key(python_static)


def run_handshake(swift: SwiftPeer, python, protocol: str, swift_role: str) -> None:
    count = HANDSHAKE_MESSAGES[protocol.split("_")[1]]
    for index in range(count):
        payload = f"handshake payload {index}".encode()
        swift_writes = (index % 2 == 0) == (swift_role == "initiator")
        if swift_writes:
            assert python.read_message(swift.ok(f"write {payload.hex()}")) == payload
        else:
            assert swift.ok(f"read {python.write_message(payload).hex()}") == payload
    assert python.handshake_finished


@pytest.mark.parametrize("swift_role", ["initiator", "responder"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_handshake_and_transport(noise_connection, noise_peer_bin, protocol, swift_role):
    swift, python, python_public = make_pair(noise_connection, noise_peer_bin, protocol, swift_role)
    try:
        run_handshake(swift, python, protocol, swift_role)
        assert swift.ok("hash") == python.get_handshake_hash()
        assert swift.ok("remote-static") == python_public

        sizes = [0, 1, 100, 1000, 65535 - 16]
        for round_, size in enumerate(sizes):
            to_python = bytes((round_ + i) % 256 for i in range(size))
            assert python.decrypt(swift.ok(f"write {to_python.hex()}")) == to_python
            to_swift = os.urandom(size)
            assert swift.ok(f"read {python.encrypt(to_swift).hex()}") == to_swift

        # Rekey each direction on both sides at the same point in the stream.
        swift.ok("rekey-send")
        python.rekey_inbound_cipher()
        python.rekey_outbound_cipher()
        swift.ok("rekey-receive")
        for _ in range(3):
            assert python.decrypt(swift.ok("write 6869")) == b"hi"
            assert swift.ok(f"read {python.encrypt(b'ho').hex()}") == b"ho"

        # A replayed message fails authentication and breaks the Swift session.
        message = python.encrypt(b"once")
        assert swift.ok(f"read {message.hex()}") == b"once"
        assert swift.error_code(f"read {message.hex()}") == "decryptFailed"
        assert swift.error_code(f"read {python.encrypt(b'next').hex()}") == "wrongState"
    finally:
        swift.close()


@pytest.mark.parametrize("swift_role", ["initiator", "responder"])
def test_bit_flip_and_reorder_from_python_are_refused(noise_connection, noise_peer_bin, swift_role):
    protocol = "Noise_IK_25519_ChaChaPoly_SHA256"
    for tamper in ("flip", "reorder"):
        swift, python, _ = make_pair(noise_connection, noise_peer_bin, protocol, swift_role)
        try:
            run_handshake(swift, python, protocol, swift_role)
            first, second = python.encrypt(b"first"), python.encrypt(b"second")
            if tamper == "flip":
                flipped = bytearray(first)
                flipped[3] ^= 0x10
                assert swift.error_code(f"read {bytes(flipped).hex()}") == "decryptFailed"
            else:
                assert swift.error_code(f"read {second.hex()}") == "decryptFailed"
            assert swift.error_code(f"read {first.hex()}") == "wrongState"
        finally:
            swift.close()


def test_wrong_psk_is_refused(noise_connection, noise_peer_bin):
    """XXpsk3 with a different PSK on each side: the Swift responder refuses the third message."""
    protocol = "Noise_XXpsk3_25519_ChaChaPoly_SHA256"
    swift, python, _ = make_pair(noise_connection, noise_peer_bin, protocol, "responder", swift_psk=os.urandom(32))
    try:
        swift.ok(f"read {python.write_message(b'').hex()}")
        python.read_message(swift.ok("write "))
        assert swift.error_code(f"read {python.write_message(b'').hex()}") == "decryptFailed"
    finally:
        swift.close()


def test_ik_toward_the_wrong_key_is_refused(noise_connection, noise_peer_bin):
    """A Python IK initiator that believes the responder has another key: Swift refuses message 1."""
    protocol = "Noise_IK_25519_ChaChaPoly_SHA256"
    swift = SwiftPeer(noise_peer_bin, protocol, "responder", static=os.urandom(32))
    try:
        python = noise_connection.NoiseConnection.from_name(protocol.encode())
        python.set_as_initiator()
        python.set_keypair_from_private_bytes(noise_connection.Keypair.STATIC, os.urandom(32))
        python.set_keypair_from_public_bytes(noise_connection.Keypair.REMOTE_STATIC, public_key(os.urandom(32)))
        python.start_handshake()
        assert swift.error_code(f"read {python.write_message(b'hello').hex()}") == "decryptFailed"
    finally:
        swift.close()
