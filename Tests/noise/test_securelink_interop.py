"""Interop of the Swift SecureLink framing (ordersync-noise-peer --secure-link) with an
independent implementation of Docs/SECURITY.md written here on Python's `noiseprotocol`:
pairing (XXpsk3 with the HKDF pre-shared key), IK, the transport header byte, chunking,
batches of whole messages and rekeying, with Swift as initiator and as responder, and a wrong
pairing code."""

from __future__ import annotations

import hashlib
import hmac
import os
import subprocess

import pytest

from test_noise_interop import public_key

PAIRING = ("ordersync.pair.v1", b"Noise_XXpsk3_25519_ChaChaPoly_SHA256")
KNOWN = ("ordersync.ik.v1", b"Noise_IK_25519_ChaChaPoly_SHA256")
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
MORE, REKEY, CONTROL, BATCH = 0x01, 0x02, 0x04, 0x08
MAX_CHUNK = 65535 - 16 - 1


def code_text(code: bytes) -> str:
    value = int.from_bytes(code, "big")
    text = "".join(CROCKFORD[(value >> (5 * (15 - i))) & 31] for i in range(16))
    return "-".join(text[i:i + 4] for i in range(0, 16, 4))


def pairing_psk(code: bytes) -> bytes:
    """RFC 5869 HKDF-SHA256(ikm=code, salt="ordersync pairing v1", info="", L=32)."""
    prk = hmac.new(b"ordersync pairing v1", code, hashlib.sha256).digest()
    return hmac.new(prk, b"\x01", hashlib.sha256).digest()


class PythonLink:
    """The SecureLink framing around a `noiseprotocol` NoiseConnection."""

    def __init__(self, connection, subprotocol, *, initiator: bool, static: bytes,
                 remote_static: bytes | None = None, psk: bytes | None = None, rekey_interval: int = 10_000):
        name, protocol = subprotocol
        self.noise = connection.NoiseConnection.from_name(protocol)
        self.noise.set_as_initiator() if initiator else self.noise.set_as_responder()
        self.noise.set_prologue(name.encode())
        self.noise.set_keypair_from_private_bytes(connection.Keypair.STATIC, static)
        if remote_static is not None:
            self.noise.set_keypair_from_public_bytes(connection.Keypair.REMOTE_STATIC, remote_static)
        if psk is not None:
            self.noise.set_psks(psk=psk)
        self.noise.start_handshake()
        self.rekey_interval = rekey_interval
        self.sent = 0
        self.partial: bytearray | None = None
        self.partial_control = False

    def seal(self, message: bytes, control: bool = False) -> list[bytes]:
        out, start = [], 0
        while True:
            chunk = message[start:start + MAX_CHUNK]
            start += len(chunk)
            header = (CONTROL if control else 0) | (MORE if start < len(message) else 0)
            self.sent += 1
            rekey = self.sent % self.rekey_interval == 0
            out.append(self.noise.encrypt(bytes([header | (REKEY if rekey else 0)]) + chunk))
            if rekey:
                self.noise.rekey_outbound_cipher()
            if start >= len(message):
                return out

    def seal_batch(self, messages: list[bytes]) -> bytes:
        """Several whole sync messages in one transport message, each after its 4-byte length."""
        self.sent += 1
        rekey = self.sent % self.rekey_interval == 0
        body = b"".join(len(m).to_bytes(4, "big") + m for m in messages)
        assert len(body) <= MAX_CHUNK
        wire = self.noise.encrypt(bytes([BATCH | (REKEY if rekey else 0)]) + body)
        if rekey:
            self.noise.rekey_outbound_cipher()
        return wire

    def receive(self, wire: bytes) -> list[tuple[str, bytes]]:
        """The whole messages one transport message completes: none (a chunk), one, or a batch."""
        plain = self.noise.decrypt(wire)
        header, chunk = plain[0], plain[1:]
        assert header & ~(MORE | REKEY | CONTROL | BATCH) == 0
        if header & BATCH:
            assert header & (MORE | CONTROL) == 0 and self.partial is None
            out, at = [], 0
            while at < len(chunk):
                length = int.from_bytes(chunk[at:at + 4], "big")
                assert at + 4 + length <= len(chunk)
                out.append(("message", chunk[at + 4:at + 4 + length]))
                at += 4 + length
            assert out
            if header & REKEY:
                self.noise.rekey_inbound_cipher()
            return out
        control = bool(header & CONTROL)
        if self.partial is None:
            self.partial, self.partial_control = bytearray(), control
        assert self.partial_control == control
        self.partial += chunk
        if header & REKEY:
            self.noise.rekey_inbound_cipher()
        if header & MORE:
            return []
        whole, self.partial = bytes(self.partial), None
        return [("control" if control else "message", whole)]


class SwiftLink:
    """`ordersync-noise-peer --secure-link MODE`, one command line in, one answer line out."""

    def __init__(self, binary, mode: str, static: bytes, *options: str):
        command = [str(binary), "--secure-link", mode, "--static", static.hex(), *options]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        ready = self.process.stdout.readline().split()
        assert ready and ready[0] == "ready", self.process.stderr.read()

    def command(self, line: str) -> str:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().rstrip("\n")
        assert answer, self.process.stderr.read()
        return answer

    def events(self, line: str) -> list[tuple[str, ...]]:
        answer = self.command(line)
        assert answer.startswith("ok"), f"{line[:20]}: {answer}"
        return [tuple(bytes.fromhex(part) if i else part for i, part in enumerate(item.split(":")))
                for item in answer.split()[1:]]

    def error(self, line: str) -> str:
        answer = self.command(line)
        assert answer.startswith("error "), answer
        return answer.split()[1]

    def close(self) -> None:
        self.process.stdin.close()
        assert self.process.wait(timeout=10) == 0, self.process.stderr.read()


def sends(events) -> list[bytes]:
    return [event[1] for event in events if event[0] == "send"]


def exchange(swift: SwiftLink, python: PythonLink, rekey_interval: int) -> None:
    """Messages both ways: small, chunked (150 KB), control; enough of them to rekey."""
    big = os.urandom(150_000)
    for index in range(3 * rekey_interval + 1):
        body = big if index == 1 else f"order {index}".encode()
        control = index % 4 == 3
        received = []
        for wire in sends(swift.events(("seal-control " if control else "seal ") + body.hex())):
            received += python.receive(wire)
        assert received == [("control" if control else "message", body)]
        answer = []
        for wire in python.seal(body, control=control):
            answer += swift.events(f"receive {wire.hex()}")
        assert answer == [("control" if control else "message", body)]
    # Batches both ways: whole messages sharing transport messages, a 100 KB one alone in
    # chunks, an empty one; enough of them to cross a rekey.
    for round in range(rekey_interval + 1):
        batch = [f"order {round}.{k}".encode() * (k + 1) for k in range(30)] + [os.urandom(100_000), b"", b"last"]
        wires = sends(swift.events("seal-batch " + ",".join(m.hex() for m in batch)))
        assert len(wires) == 4, "30 small ones together, the large one in two chunks, the last two together"
        received = []
        for wire in wires:
            received += python.receive(wire)
        assert received == [("message", m) for m in batch]
        small = batch[:30]
        answer = swift.events(f"receive {python.seal_batch(small).hex()}")
        assert answer == [("message", m) for m in small]
    # A bit flip from Python: the Swift side refuses it and then everything.
    flipped = bytearray(python.seal(b"tampered")[0])
    flipped[5] ^= 1
    assert swift.error(f"receive {bytes(flipped).hex()}") == "authenticationFailed"
    assert swift.error("seal 00") == "wrongState"


@pytest.mark.parametrize("swift_role", ["initiator", "responder"])
def test_pairing_then_transport(noise_connection, noise_peer_bin, swift_role):
    code = os.urandom(10)
    swift_static, python_static = os.urandom(32), os.urandom(32)
    interval = 3
    options = ["--code", code_text(code).lower(), "--rekey-interval", str(interval)]
    python = PythonLink(noise_connection, PAIRING, initiator=swift_role == "responder", static=python_static,
                        psk=pairing_psk(code), rekey_interval=interval)
    if swift_role == "initiator":
        swift = SwiftLink(noise_peer_bin, "pairing-initiator", swift_static, *options, "--payload", b"slave".hex())
        try:
            assert python.noise.read_message(sends(swift.events("start"))[0]) == b""
            events = swift.events(f"receive {python.noise.write_message(b'master').hex()}")
            assert events[1] == ("established", public_key(python_static), b"master")
            assert python.noise.read_message(sends(events)[0]) == b"slave"
            exchange(swift, python, interval)
        finally:
            swift.close()
    else:
        swift = SwiftLink(noise_peer_bin, "pairing-responder", swift_static, *options, "--payload", b"master".hex())
        try:
            message2 = sends(swift.events(f"receive {python.noise.write_message(b'').hex()}"))[0]
            assert python.noise.read_message(message2) == b"master"
            events = swift.events(f"receive {python.noise.write_message(b'slave').hex()}")
            assert events == [("established", public_key(python_static), b"slave")]
            assert swift.command("hash") == "ok " + python.noise.get_handshake_hash().hex()
            exchange(swift, python, interval)
        finally:
            swift.close()


@pytest.mark.parametrize("swift_role", ["initiator", "responder"])
def test_wrong_code_is_refused(noise_connection, noise_peer_bin, swift_role):
    code, other = os.urandom(10), os.urandom(10)
    python = PythonLink(noise_connection, PAIRING, initiator=swift_role == "responder", static=os.urandom(32),
                        psk=pairing_psk(other))
    mode = "pairing-initiator" if swift_role == "initiator" else "pairing-responder"
    swift = SwiftLink(noise_peer_bin, mode, os.urandom(32), "--code", code_text(code))
    try:
        if swift_role == "responder":
            python.noise.read_message(sends(swift.events(f"receive {python.noise.write_message(b'').hex()}"))[0])
            assert swift.error(f"receive {python.noise.write_message(b'').hex()}") == "authenticationFailed"
        else:
            python.noise.read_message(sends(swift.events("start"))[0])
            message3 = sends(swift.events(f"receive {python.noise.write_message(b'').hex()}"))[0]
            with pytest.raises(Exception):
                python.noise.read_message(message3)
    finally:
        swift.close()


@pytest.mark.parametrize("swift_role", ["initiator", "responder"])
def test_known_link_then_transport(noise_connection, noise_peer_bin, swift_role):
    swift_static, python_static, previous = os.urandom(32), os.urandom(32), os.urandom(32)
    if swift_role == "initiator":
        python = PythonLink(noise_connection, KNOWN, initiator=False, static=python_static, rekey_interval=4)
        swift = SwiftLink(noise_peer_bin, "known-initiator", swift_static, "--master-key",
                          public_key(python_static).hex(), "--rekey-interval", "4")
        try:
            assert python.noise.read_message(sends(swift.events("start"))[0]) == b""
            events = swift.events(f"receive {python.noise.write_message(b'master').hex()}")
            assert events == [("established", public_key(python_static), b"master")]
            exchange(swift, python, 4)
        finally:
            swift.close()
    else:
        # Python addresses the Swift master's previous key: the second of its two.
        python = PythonLink(noise_connection, KNOWN, initiator=True, static=python_static,
                            remote_static=public_key(previous), rekey_interval=4)
        swift = SwiftLink(noise_peer_bin, "known-responder", swift_static, "--previous-static", previous.hex(),
                          "--rekey-interval", "4")
        try:
            events = swift.events(f"receive {python.noise.write_message(b'').hex()}")
            assert events == [("presented", public_key(python_static))]
            assert swift.command("key-index") == "ok 1"
            events = swift.events(f"accept {b'master'.hex()}")
            assert events[1] == ("established", public_key(python_static), b"")
            assert python.noise.read_message(sends(events)[0]) == b"master"
            exchange(swift, python, 4)
        finally:
            swift.close()


def test_known_responder_refuses_an_unknown_key(noise_connection, noise_peer_bin):
    python = PythonLink(noise_connection, KNOWN, initiator=True, static=os.urandom(32),
                        remote_static=public_key(os.urandom(32)))
    swift = SwiftLink(noise_peer_bin, "known-responder", os.urandom(32))
    try:
        assert swift.error(f"receive {python.noise.write_message(b'').hex()}") == "authenticationFailed"
    finally:
        swift.close()
