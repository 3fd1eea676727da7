#!/usr/bin/env python3
"""Writes the seed corpus of FuzzSecureLink in Fuzz/corpus/FuzzSecureLink/ (needs the
`noiseprotocol` package: run with /work/main/.venv/bin/python or after Scripts/setup.sh).

Each seed is a scenario byte and messages of a 2-byte big-endian length and that many bytes,
as Fuzz/Sources/FuzzSecureLink reads them. The handshake messages are the honest ones for the
fuzz target's fixed keys and fixed "random" ephemeral keys, made here with `noiseprotocol`, so
the fuzzer starts from inputs that get past each step.
"""
import hashlib
import hmac
import os
import struct
import warnings

from noise.connection import Keypair, NoiseConnection

from make_corpus import write

KEY = {name: bytes([byte]) * 32 for name, byte in (("slave", 0x11), ("master", 0x22), ("previous", 0x33))}
EPHEMERAL = bytes((i * 73 + 5) % 256 for i in range(32))  # the fuzz target's fixed random source
CODE = bytes(range(1, 11))
PSK = hmac.new(hmac.new(b"ordersync pairing v1", CODE, hashlib.sha256).digest(), b"\x01", hashlib.sha256).digest()


def party(protocol, prologue, initiator, static, remote=None, psk=None):
    connection = NoiseConnection.from_name(protocol)
    connection.set_as_initiator() if initiator else connection.set_as_responder()
    connection.set_prologue(prologue)
    connection.set_keypair_from_private_bytes(Keypair.STATIC, static)
    connection.set_keypair_from_private_bytes(Keypair.EPHEMERAL, EPHEMERAL)
    if remote is not None:
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
        public = X25519PrivateKey.from_private_bytes(remote).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        connection.set_keypair_from_public_bytes(Keypair.REMOTE_STATIC, public)
    if psk is not None:
        connection.set_psks(psk=psk)
    connection.start_handshake()
    return connection


def seed(selector, *messages):
    return bytes([selector]) + b"".join(struct.pack(">H", len(m)) + m for m in messages)


def seal(connection, body, header=0):
    return connection.encrypt(bytes([header]) + body)


def corpus():
    ik = (b"Noise_IK_25519_ChaChaPoly_SHA256", b"ordersync.ik.v1")
    pair = (b"Noise_XXpsk3_25519_ChaChaPoly_SHA256", b"ordersync.pair.v1")
    seeds = {}

    # Known responder: message 1 to the current and to the previous key, and a truncated one.
    for name in ("master", "previous"):
        slave = party(*ik, True, KEY["slave"], remote=KEY[name])
        seeds[f"known-responder-message1-{name}"] = seed(0, slave.write_message(b""))
    seeds["known-responder-truncated"] = seeds["known-responder-message1-master"][:60]

    # Pairing responder: message 1 and message 3 as the honest slave writes them.
    slave = party(*pair, True, KEY["slave"], psk=PSK)
    master = party(*pair, False, KEY["master"], psk=PSK)
    message1 = slave.write_message(b"")
    master.read_message(message1)
    message2 = master.write_message(b"\x01")
    slave.read_message(message2)
    message3 = slave.write_message(b"\x02")
    seeds["pairing-responder-message1"] = seed(1, message1)
    seeds["pairing-responder-message1-3"] = seed(1, message1, message3)
    seeds["pairing-initiator-message2"] = seed(3, message2)

    # Known initiator: the honest message 2, then transport messages from the master.
    slave = party(*ik, True, KEY["slave"], remote=KEY["master"])
    master = party(*ik, False, KEY["master"])
    master.read_message(slave.write_message(b""))
    message2 = master.write_message(b"\x07")
    seeds["known-initiator-message2"] = seed(2, message2, seal(master, b'{"type":"order"}'))

    # Established: what the slave's side would send (the fuzz pair uses the same fixed keys).
    slave = party(*ik, True, KEY["slave"], remote=KEY["master"])
    master = party(*ik, False, KEY["master"])
    master.read_message(slave.write_message(b""))
    slave.read_message(master.write_message(b""))
    seeds["established-two-messages"] = seed(4, seal(slave, b"one"), seal(slave, b"two", 0x04))
    seeds["established-chunks"] = seed(4, seal(slave, b"a" * 100, 0x01), seal(slave, b"b" * 100, 0x02))
    seeds["established-unknown-bit"] = seed(4, seal(slave, b"x", 0x08))

    # Edited honest transport: edit kind, target, position, xor, then message sizes (x300 bytes).
    seeds["edit-flip"] = bytes([5, 1, 2, 0x20, 1, 2, 0, 3])
    seeds["edit-drop-chunked"] = bytes([5, 2, 0, 0, 120, 1, 200])
    seeds["edit-duplicate"] = bytes([5, 3, 0, 0, 0, 1, 2, 3])
    seeds["edit-swap"] = bytes([5, 4, 0, 0, 5, 5, 5])
    seeds["edit-truncate"] = bytes([5, 0, 20, 0, 9])
    return seeds


if __name__ == "__main__":
    # Fixed ephemeral keys are exactly what the seeds need; noiseprotocol warns about them.
    warnings.simplefilter("ignore", UserWarning)
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    write("FuzzSecureLink", corpus())
