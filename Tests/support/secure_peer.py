"""An independent implementation of the secure link (Docs/SECURITY.md) for the tests: Noise from
PyPI's `noiseprotocol`, WebSockets from Python `websockets`, nothing from the project's code.

It is a slave (the Noise initiator: pairing with `ordersync.pair.v1`, every later connection with
`ordersync.ik.v1`) and a master (the responder, for a rogue or stand-in master), with the
transport framing (the header byte: 0x01 more, 0x02 rekey-after, 0x04 control; chunks of at most
65,518 bytes; a rekey every 10,000 messages) and the sync protocol of Docs/PROTOCOL.md inside.

    peer = SecurePeer.pair("ws://10.231.7.1:7420/", "7KQ4-M2XD-9HZC-B0RT", static_private, name="py")
    peer.send({"type": "hello", "proto": "ordersync/1", "terminal": peer.node_id, "name": "py"})
    ready = peer.until(lambda m: m.get("type") == "ready")

Run as a script it is the command-line peer the LAN tests start on a simulated host
(`python secure_peer.py --help`).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import os
import sys
import threading
import time
from typing import Callable

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from noise.connection import Keypair, NoiseConnection
from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.sync.client import connect
from websockets.sync.server import serve

PAIRING = "ordersync.pair.v1"
KNOWN = "ordersync.ik.v1"
NOISE_NAMES = {PAIRING: b"Noise_XXpsk3_25519_ChaChaPoly_SHA256", KNOWN: b"Noise_IK_25519_ChaChaPoly_SHA256"}
MORE, REKEY, CONTROL = 0x01, 0x02, 0x04
#: The largest chunk of an application message in one Noise transport message: 65,535 bytes
#: less the 16-byte tag and the header byte.
MAX_CHUNK = 65_535 - 16 - 1
REKEY_INTERVAL = 10_000
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
PAIRING_SALT = b"ordersync pairing v1"


class LinkError(Exception):
    """The secure link failed: a handshake or decryption failure, or a framing error."""


class Refused(Exception):
    """The other side closed the link before it was established (`code`, `reason`)."""

    def __init__(self, code: int | None, reason: str):
        super().__init__(f"closed {code} {reason!r}")
        self.code = code
        self.reason = reason


# Keys, ids, codes ----------------------------------------------------------------------------

def public_key(private: bytes) -> bytes:
    """The X25519 public key of a 32-byte private key."""
    return X25519PrivateKey.from_private_bytes(private).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def node_id(public: bytes) -> str:
    """A node id: the first 20 bytes of SHA-256(public key), base32, in groups of four."""
    text = base64.b32encode(hashlib.sha256(public).digest()[:20]).decode()
    return "-".join(text[i:i + 4] for i in range(0, len(text), 4))


def decode_code(text: str) -> bytes:
    """The 10 bytes of a pairing code typed as 16 Crockford base32 characters (case, dashes and
    spaces ignored; O read as 0, I and L as 1)."""
    cleaned = text.upper().replace("-", "").replace(" ", "").replace("O", "0").replace("I", "1").replace("L", "1")
    if len(cleaned) != 16 or any(c not in CROCKFORD for c in cleaned):
        raise ValueError(f"not a pairing code: {text!r}")
    value = 0
    for c in cleaned:
        value = value * 32 + CROCKFORD.index(c)
    return value.to_bytes(10, "big")


def encode_code(code: bytes) -> str:
    """The text of a 10-byte pairing code: four groups of four Crockford base32 characters."""
    value = int.from_bytes(code, "big")
    text = "".join(CROCKFORD[(value >> (5 * (15 - i))) & 31] for i in range(16))
    return "-".join(text[i:i + 4] for i in range(0, 16, 4))


def pairing_psk(code: bytes) -> bytes:
    """RFC 5869 HKDF-SHA256(ikm = the code's bytes, salt = "ordersync pairing v1", info = "", 32)."""
    prk = hmac.new(PAIRING_SALT, code, hashlib.sha256).digest()
    return hmac.new(prk, b"\x01", hashlib.sha256).digest()


def rekeyed(key: bytes) -> bytes:
    """Noise's Rekey(k): the first 32 bytes of ENCRYPT(k, 2^64-1, "", 32 zero bytes), computed
    here with ChaCha20-Poly1305 itself rather than the Noise package's helper."""
    nonce = b"\x00\x00\x00\x00" + (2**64 - 1).to_bytes(8, "little")
    return ChaCha20Poly1305(key).encrypt(nonce, bytes(32), b"")[:32]


# The Noise session and its framing --------------------------------------------------------

class NoiseLink:
    """One side of a secure link's Noise session: the handshake, then sealed transport messages
    with the header byte, chunking and rekeying of Docs/SECURITY.md. No I/O."""

    def __init__(self, subprotocol: str, *, initiator: bool, static: bytes, remote_static: bytes | None = None,
                 psk: bytes | None = None, rekey_interval: int = REKEY_INTERVAL):
        self.subprotocol = subprotocol
        self.noise = NoiseConnection.from_name(NOISE_NAMES[subprotocol])
        self.noise.set_as_initiator() if initiator else self.noise.set_as_responder()
        self.noise.set_prologue(subprotocol.encode())
        self.noise.set_keypair_from_private_bytes(Keypair.STATIC, static)
        if remote_static is not None:
            self.noise.set_keypair_from_public_bytes(Keypair.REMOTE_STATIC, remote_static)
        if psk is not None:
            self.noise.set_psks(psk=psk)
        self.noise.start_handshake()
        self._handshake = self.noise.noise_protocol.handshake_state
        self.rekey_interval = rekey_interval
        self.sent = 0
        self.received = 0
        self.rekeys = 0
        self._partial: bytearray | None = None
        self._partial_control = False

    # Handshake

    def write_handshake(self, payload: bytes = b"") -> bytes:
        return bytes(self.noise.write_message(payload))

    def read_handshake(self, message: bytes) -> bytes:
        try:
            return bytes(self.noise.read_message(message))
        except Exception as error:  # noqa: BLE001 - any failure of the handshake is one outcome
            raise LinkError(f"handshake failed: {type(error).__name__} {error}") from None

    @property
    def established(self) -> bool:
        return self.noise.handshake_finished

    @property
    def remote_static(self) -> bytes | None:
        """The peer's static public key, once the handshake has revealed it."""
        rs = getattr(self._handshake, "rs", None)
        return getattr(rs, "public_bytes", None)

    # Transport

    def seal(self, message: bytes, control: bool = False) -> list[bytes]:
        """One application message as the Noise transport messages that carry it, in order."""
        out, start = [], 0
        while True:
            chunk = message[start:start + MAX_CHUNK]
            start += len(chunk)
            header = (CONTROL if control else 0) | (MORE if start < len(message) else 0)
            self.sent += 1
            rekey = self.sent % self.rekey_interval == 0
            out.append(self.noise.encrypt(bytes([header | (REKEY if rekey else 0)]) + chunk))
            if rekey:
                self._rekey(self.noise.noise_protocol.cipher_state_encrypt)
            if start >= len(message):
                return out

    def open(self, wire: bytes) -> tuple[str, bytes] | None:
        """Decrypts one transport message: ("message" | "control", whole message) once the last
        chunk of an application message arrives, else None."""
        try:
            plain = self.noise.decrypt(wire)
        except Exception as error:  # noqa: BLE001
            raise LinkError(f"decryption failed: {type(error).__name__} {error}") from None
        self.received += 1
        if not plain:
            raise LinkError("a transport message without its header byte")
        header, chunk = plain[0], plain[1:]
        if header & ~(MORE | REKEY | CONTROL):
            raise LinkError(f"unknown header bits {header:#04x}")
        control = bool(header & CONTROL)
        if self._partial is None:
            self._partial, self._partial_control = bytearray(), control
        elif self._partial_control != control:
            raise LinkError("a control chunk inside a sync message (or the reverse)")
        self._partial += chunk
        if header & REKEY:
            self._rekey(self.noise.noise_protocol.cipher_state_decrypt)
        if header & MORE:
            return None
        whole, self._partial = bytes(self._partial), None
        return ("control" if control else "message", whole)

    def _rekey(self, cipher_state) -> None:
        cipher_state.k = rekeyed(cipher_state.k)
        cipher_state.cipher.initialize(cipher_state.k)
        self.rekeys += 1


# A slave: the initiator over a WebSocket ---------------------------------------------------

def _closed(error: ConnectionClosed) -> Refused:
    return Refused(error.rcvd.code if error.rcvd else None, error.rcvd.reason if error.rcvd else "")


class SecurePeer:
    """A slave's secure link to a master over Python `websockets` (binary messages only).

    `SecurePeer.pair(...)` pairs with a code; `SecurePeer.known(...)` connects with the master key
    it paired with. Both raise `Refused` when the master closes the link before it is
    established and `LinkError` when the master does not prove the expected key."""

    def __init__(self, ws, link: NoiseLink, static: bytes, master_payload: dict, master_key: bytes):
        self.ws = ws
        self.link = link
        self.static = static
        #: The master's handshake payload: {"master": node id, "store": store}.
        self.master_payload = master_payload
        #: The master's static public key the handshake proved.
        self.master_key = master_key
        #: Control messages received (`paired`, `masterKey`), in order.
        self.controls: list[dict] = []
        #: Every sync message received, in order.
        self.received: list[dict] = []
        self.wire_bytes_sent = 0
        self.wire_bytes_received = 0

    @property
    def node_id(self) -> str:
        return node_id(public_key(self.static))

    @staticmethod
    def _open(url: str, subprotocol: str, source: str | None, timeout: float):
        kwargs = {"source_address": (source, 0)} if source else {}
        try:
            ws = connect(url, subprotocols=[subprotocol], open_timeout=timeout, close_timeout=2, max_size=None,
                         compression=None, legacy=True, **kwargs)
        except InvalidHandshake as error:
            raise Refused(None, f"WebSocket handshake refused: {error}") from None
        if ws.subprotocol != subprotocol:
            ws.close()
            raise LinkError(f"the master chose subprotocol {ws.subprotocol!r}, not {subprotocol}")
        return ws

    @staticmethod
    def _send_binary(ws, message: bytes) -> None:
        try:
            ws.send(message)
        except ConnectionClosed as error:
            raise _closed(error) from None

    @staticmethod
    def _recv_binary(ws, timeout: float) -> bytes:
        try:
            message = ws.recv(timeout=timeout)
        except ConnectionClosed as error:
            raise _closed(error) from None
        if isinstance(message, str):
            raise LinkError("a text message on a secure link")
        return message

    @classmethod
    def pair(cls, url: str, code: str, static: bytes, name: str = "py-terminal", source: str | None = None,
             timeout: float = 10) -> "SecurePeer":
        """Pairs with `ordersync.pair.v1` (XXpsk3) using the typed `code`; returns the established
        peer once the master's `paired` control message decrypted."""
        link = NoiseLink(PAIRING, initiator=True, static=static, psk=pairing_psk(decode_code(code)))
        ws = cls._open(url, PAIRING, source, timeout)
        try:
            cls._send_binary(ws, link.write_handshake(b""))
            payload = json.loads(link.read_handshake(cls._recv_binary(ws, timeout)) or b"{}")
            master_key = link.remote_static
            cls._send_binary(ws, link.write_handshake(json.dumps({"name": name, "terminal": node_id(public_key(static))}).encode()))
            peer = cls(ws, link, static, payload, master_key)
            # Pairing is proved only by the master's first transport message.
            kind, body = peer._next(timeout)
            if kind != "control" or json.loads(body).get("type") != "paired":
                raise LinkError(f"the first transport message is not `paired`: {kind} {body[:80]!r}")
            return peer
        except BaseException:
            ws.close()
            raise

    @classmethod
    def known(cls, url: str, master_key: bytes, static: bytes, source: str | None = None,
              timeout: float = 10) -> "SecurePeer":
        """Connects with `ordersync.ik.v1` (IK) to the master holding `master_key`."""
        link = NoiseLink(KNOWN, initiator=True, static=static, remote_static=master_key)
        ws = cls._open(url, KNOWN, source, timeout)
        try:
            cls._send_binary(ws, link.write_handshake(b""))
            payload = json.loads(link.read_handshake(cls._recv_binary(ws, timeout)) or b"{}")
            if payload.get("refused"):
                # The master proved its key and refused this terminal; its close follows.
                try:
                    ws.recv(timeout=timeout)
                except ConnectionClosed as error:
                    raise _closed(error) from None
                raise Refused(None, f"refused in the handshake answer: {payload['refused']}")
            return cls(ws, link, static, payload, master_key)
        except BaseException:
            ws.close()
            raise

    # Messages

    def _next(self, timeout: float) -> tuple[str, bytes]:
        deadline = time.monotonic() + timeout
        while True:
            wire = self._recv_binary(self.ws, max(0.01, deadline - time.monotonic()))
            self.wire_bytes_received += len(wire)
            opened = self.link.open(wire)
            if opened is None:
                continue
            kind, body = opened
            if kind == "control":
                self.controls.append(json.loads(body))
            return opened

    def send(self, message: dict | bytes, control: bool = False) -> None:
        """Sends one sync message (a dict, as JSON) or raw bytes, sealed."""
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        for wire in self.link.seal(body, control=control):
            self.wire_bytes_sent += len(wire)
            self._send_binary(self.ws, wire)

    def send_tampered(self, how: str, message: dict, second: dict | None = None) -> None:
        """Sends `message` sealed, then edited on the wire as an attacker on the path would:
        `flip` one bit of its ciphertext, `replay` it (sent twice), or `reorder` it behind
        `second` (sealed after it, sent before it)."""
        first = self.link.seal(json.dumps(message).encode())
        if how == "flip":
            wire = bytearray(first[0])
            wire[len(wire) // 2] ^= 0x01
            out = [bytes(wire), *first[1:]]
        elif how == "replay":
            out = first + first
        elif how == "reorder":
            out = self.link.seal(json.dumps(second).encode()) + first
        else:
            raise ValueError(f"unknown tampering {how!r}")
        for wire in out:
            self.wire_bytes_sent += len(wire)
            self._send_binary(self.ws, wire)

    def recv(self, timeout: float = 10) -> dict:
        """The next sync message (control messages are kept in `controls`)."""
        deadline = time.monotonic() + timeout
        while True:
            kind, body = self._next(max(0.01, deadline - time.monotonic()))
            if kind == "message":
                message = json.loads(body)
                self.received.append(message)
                return message

    def until(self, predicate: Callable[[dict], bool], timeout: float = 10) -> dict:
        """The first sync message that satisfies `predicate`."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.recv(max(0.01, deadline - time.monotonic()))
            if predicate(message):
                return message

    def hello(self, name: str = "py-terminal", **extra) -> dict:
        """Sends `hello` and reads the snapshot (or catch-up) up to `ready`; returns `ready`."""
        self.send({"type": "hello", "proto": "ordersync/1", "terminal": self.node_id, "name": name,
                   "store": self.master_payload.get("store"), **extra})
        return self.until(lambda m: m.get("type") == "ready")

    def close(self) -> None:
        self.ws.close()


# A master: the responder, for a rogue or stand-in master ----------------------------------

class SecureResponder:
    """A WebSocket server answering `ordersync.ik.v1` and `ordersync.pair.v1` as a master holding
    `static` would. It records what each connection showed it: whether the handshake decrypted,
    how many bytes came in and every plaintext it could read. A connection whose first message
    does not decrypt (made for another master's key) gets `garbage` bytes as a fake second
    message, so that the initiator has to judge them. With `refuse`, every connection is closed
    (1008 with that reason) once its first message came, without an answer."""

    def __init__(self, host: str, port: int, static: bytes, store: str, pairing_code: str | None = None,
                 on_event: Callable[[dict], None] | None = None, garbage: bool = True, refuse: str | None = None):
        self.static = static
        self.refuse = refuse
        self.store = store
        self.pairing_code = pairing_code
        self.garbage = garbage
        self.on_event = on_event or (lambda event: None)
        self.lock = threading.Lock()
        self.server = serve(self._handler, host, port, subprotocols=[KNOWN, PAIRING], max_size=None,
                            compression=None, select_subprotocol=self._select)
        self.port = self.server.socket.getsockname()[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @staticmethod
    def _select(connection, offered):
        for choice in (KNOWN, PAIRING):
            if choice in offered:
                return choice
        return None

    def start(self) -> "SecureResponder":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()

    def _payload(self) -> bytes:
        return json.dumps({"master": node_id(public_key(self.static)), "store": self.store}).encode()

    def _handler(self, ws) -> None:
        peer = "%s:%d" % ws.remote_address[:2]
        record = {"event": "connection", "peer": peer, "subprotocol": ws.subprotocol, "bytes": 0,
                  "handshake": "none", "plaintexts": []}
        try:
            if ws.subprotocol == KNOWN:
                link = NoiseLink(KNOWN, initiator=False, static=self.static)
            elif ws.subprotocol == PAIRING and self.pairing_code:
                link = NoiseLink(PAIRING, initiator=False, static=self.static,
                                 psk=pairing_psk(decode_code(self.pairing_code)))
            else:
                link = None
            first = ws.recv(timeout=10)
            record["bytes"] += len(first)
            if self.refuse:
                # Refuses at once, as a master refuses a key it does not know (1008).
                record["handshake"] = "refused"
                ws.close(1008, self.refuse)
                return
            if link is None or isinstance(first, str):
                record["handshake"] = "unsupported"
                if isinstance(first, str):
                    record["plaintexts"].append(first)
                return
            try:
                link.read_handshake(first)
            except LinkError:
                record["handshake"] = "failed"
                if self.garbage:
                    ws.send(os.urandom(48 + len(self._payload()) + 16))
                # Whatever the initiator sends next is recorded (it must not be readable).
                while True:
                    more = ws.recv(timeout=5)
                    record["bytes"] += len(more)
                    if isinstance(more, str):
                        record["plaintexts"].append(more)
            ws.send(link.write_handshake(self._payload()))
            if not link.established:
                third = ws.recv(timeout=10)
                record["bytes"] += len(third)
                record["terminal"] = json.loads(link.read_handshake(third) or b"{}")
                for wire in link.seal(json.dumps({"type": "paired", "terminal": node_id(link.remote_static),
                                                  "name": record["terminal"].get("name", "")}).encode(), control=True):
                    ws.send(wire)
            record["handshake"] = "established"
            while True:
                wire = ws.recv(timeout=30)
                record["bytes"] += len(wire)
                opened = link.open(wire)
                if opened:
                    record["plaintexts"].append(opened[1].decode(errors="replace"))
        except (ConnectionClosed, TimeoutError, LinkError) as error:
            record["end"] = type(error).__name__
        finally:
            self.on_event(record)


# Command line ------------------------------------------------------------------------------

def _emit(obj: dict) -> None:
    with _EMIT_LOCK:
        print(json.dumps(obj), flush=True)


_EMIT_LOCK = threading.Lock()


def _load_state(path: str) -> dict:
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    state = {"static": os.urandom(32).hex()}
    _save_state(path, state)
    return state


def _save_state(path: str, state: dict) -> None:
    with open(path, "w") as f:
        json.dump(state, f)


def _matches(message: dict, condition: dict) -> bool:
    return all(message.get(k) == v for k, v in condition.items())


def _run_steps(peer: SecurePeer, steps: list, timeout: float) -> tuple[list[dict], dict | None]:
    received: list[dict] = []
    for step in steps:
        if "tamper" in step:
            peer.send_tampered(step["tamper"], step["send"], step.get("then"))
            continue
        if "send" in step:
            peer.send(step["send"])
            continue
        condition = step["until"]
        while True:
            try:
                message = peer.recv(timeout)
            except Refused as closed:
                close = {"code": closed.code, "reason": closed.reason}
                if condition.get("type") == "close":
                    return received, close
                raise
            received.append(message)
            if _matches(message, condition):
                break
    return received, None


def _connect_command(args) -> int:
    state = _load_state(args.state)
    static = bytes.fromhex(state["static"])
    steps = json.loads(args.steps) if args.steps else []
    out: dict = {"node": node_id(public_key(static)), "established": False, "received": [], "close": None}
    started = time.monotonic()
    try:
        if args.pair:
            peer = SecurePeer.pair(args.url, args.pair, static, name=args.name, source=args.source)
        else:
            master_key = bytes.fromhex(args.master_key) if args.master_key else bytes.fromhex(state["master"])
            peer = SecurePeer.known(args.url, master_key, static, source=args.source)
    except Refused as refused:
        out["close"] = {"code": refused.code, "reason": refused.reason}
        out["seconds"] = time.monotonic() - started
        _emit(out)
        return 0
    except LinkError as error:
        out["error"] = str(error)
        _emit(out)
        return 0
    peer.link.rekey_interval = args.rekey_interval
    out.update(established=True, master=peer.master_payload, masterKey=peer.master_key.hex(),
               seconds=time.monotonic() - started)
    state["master"] = peer.master_key.hex()
    _save_state(args.state, state)
    try:
        received, close = _run_steps(peer, steps, args.timeout)
        out["received"], out["close"] = received, close
    except Refused as closed:
        out["close"] = {"code": closed.code, "reason": closed.reason}
        out["received"] = peer.received
    for control in peer.controls:
        if control.get("type") == "masterKey":
            state["master"] = base64.b64decode(control["publicKey"]).hex()
            _save_state(args.state, state)
    out["controls"] = peer.controls
    out["bytesSent"], out["bytesReceived"] = peer.wire_bytes_sent, peer.wire_bytes_received
    out["messagesSent"], out["rekeys"] = peer.link.sent, peer.link.rekeys
    peer.close()
    _emit(out)
    return 0


def _tries_command(args) -> int:
    """Pairs with each code in turn (a fresh key each time); one JSON line per try."""
    for code in args.codes:
        started = time.monotonic()
        out = {"code": code, "established": False, "close": None}
        try:
            peer = SecurePeer.pair(args.url, code, os.urandom(32), name="py-try", source=args.source)
            out["established"] = True
            peer.close()
        except Refused as refused:
            out["close"] = {"code": refused.code, "reason": refused.reason}
        except LinkError as error:
            out["error"] = str(error)
        out["seconds"] = time.monotonic() - started
        _emit(out)
    return 0


def _guest_try(url: str, code: str, source: str | None, timeout: float = 10) -> dict:
    """One pairing try with `code` and a fresh key, recording each handshake step the master
    answered: whether message 2 came (and its size) and how the link was closed."""
    out = {"code": code, "second": None, "established": False, "close": None}
    static = os.urandom(32)
    link = NoiseLink(PAIRING, initiator=True, static=static, psk=pairing_psk(decode_code(code)))
    try:
        ws = SecurePeer._open(url, PAIRING, source, timeout)
    except Refused as refused:
        out["close"] = {"code": refused.code, "reason": refused.reason}
        return out
    try:
        SecurePeer._send_binary(ws, link.write_handshake(b""))
        second = SecurePeer._recv_binary(ws, timeout)
        out["second"] = len(second)
        link.read_handshake(second)
        SecurePeer._send_binary(ws, link.write_handshake(json.dumps({"name": "guest"}).encode()))
        SecurePeer._recv_binary(ws, timeout)
        out["established"] = True
    except Refused as refused:
        out["close"] = {"code": refused.code, "reason": refused.reason}
    except (LinkError, TimeoutError) as error:
        out["error"] = str(error)
    finally:
        ws.close()
    return out


def _hammer_command(args) -> int:
    """A guest: a wrong (random) code every --interval seconds until --seconds are up or
    standard input closes; one JSON line per try."""
    deadline = time.monotonic() + args.seconds
    stop = threading.Event()
    if args.until_stdin_closes:
        threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    while time.monotonic() < deadline and not stop.is_set():
        started = time.monotonic()
        out = _guest_try(args.url, encode_code(os.urandom(10)), args.source)
        out["at"] = time.time()
        out["seconds"] = time.monotonic() - started
        _emit(out)
        stop.wait(max(0.0, args.interval - (time.monotonic() - started)))
    return 0


def _respond_command(args) -> int:
    static = bytes.fromhex(args.static) if args.static else os.urandom(32)
    responder = SecureResponder(args.listen, args.port, static, args.store, pairing_code=args.pair, on_event=_emit,
                                refuse=args.refuse)
    _emit({"event": "listening", "port": responder.port, "id": node_id(public_key(static))})
    responder.server.serve_forever()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("connect", help="a slave: pair (--pair) or connect with IK, run STEPS, print JSON")
    c.add_argument("url")
    c.add_argument("--state", required=True, help="JSON file with this peer's key and its master's key")
    c.add_argument("--pair", help="pair with this code (else IK with the master key in --state)")
    c.add_argument("--master-key", help="hex public key of the master (overrides --state)")
    c.add_argument("--name", default="py-terminal")
    c.add_argument("--source", help="local address to connect from")
    c.add_argument("--steps", help='JSON list of {"send": msg}, {"tamper": "flip|replay|reorder", "send": msg[, "then": msg]} '
                   'and {"until": {"type": ...}} steps')
    c.add_argument("--timeout", type=float, default=15)
    c.add_argument("--rekey-interval", type=int, default=REKEY_INTERVAL, help="rekey after this many messages sent")
    t = sub.add_parser("tries", help="try pairing with each CODE in turn, print one JSON line per try")
    t.add_argument("url")
    t.add_argument("codes", nargs="+")
    t.add_argument("--source")
    h = sub.add_parser("hammer", help="a guest: a wrong pairing code every INTERVAL s, one JSON line per try")
    h.add_argument("url")
    h.add_argument("--interval", type=float, default=0.2)
    h.add_argument("--seconds", type=float, default=60)
    h.add_argument("--source")
    h.add_argument("--until-stdin-closes", action="store_true", help="also stop when standard input closes")
    r = sub.add_parser("respond", help="a master: answer secure links with its own key, print what it read")
    r.add_argument("--listen", required=True)
    r.add_argument("--port", type=int, default=0)
    r.add_argument("--store", required=True)
    r.add_argument("--static", help="hex private key (default: a fresh one)")
    r.add_argument("--pair", help="a pairing code it accepts")
    r.add_argument("--refuse", help="close every connection with 1008 and this reason after its first message")
    args = parser.parse_args(argv)
    return {"connect": _connect_command, "tries": _tries_command, "respond": _respond_command,
            "hammer": _hammer_command}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
