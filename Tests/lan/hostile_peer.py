"""A peer that was never paired, as an attacker on the store's LAN would try it (Python
`websockets`): reads whatever the master sends and tries to change orders.

    hostile_peer.py storepos URL OPERATIONS_JSON [QUIET]    # a plain StorePOS client (no subprotocol)
    hostile_peer.py cleartext URL OPERATIONS_JSON [QUIET]   # `ordersync.v1` with a forged hello

OPERATIONS_JSON is a list of operation messages sent as soon as the link is open (the forged
hello first); it stops after QUIET seconds (default 5) without a message. Prints one JSON object: `opened`, `messages` (how many came), `orders_read` (orders
in them), `close` (`code`, `reason`) and `seconds` from the TCP connect to the close.
"""

import json
import sys
import time

from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.sync.client import connect

FORGED_HELLO = {"type": "hello", "proto": "ordersync/1", "terminal": "front", "name": "front (local API)",
                "store": "shop1", "lastSeq": 0}


def main() -> int:
    mode, url, operations = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    quiet = float(sys.argv[4]) if len(sys.argv) > 4 else 5.0
    # Stop as soon as this many orders came (the event the caller waits for); otherwise at silence.
    enough = int(sys.argv[5]) if len(sys.argv) > 5 else None
    subprotocols = ["ordersync.v1"] if mode == "cleartext" else None
    out = {"mode": mode, "opened": False, "messages": 0, "orders_read": 0, "close": None, "sent": 0}
    started = time.monotonic()
    try:
        with connect(url, subprotocols=subprotocols, open_timeout=10, close_timeout=2, max_size=None,
                     compression=None) as ws:
            out["opened"] = True
            out["subprotocol"] = ws.subprotocol
            try:
                for message in ([FORGED_HELLO] if mode == "cleartext" else []) + operations:
                    ws.send(json.dumps(message))
                    out["sent"] += 1
                while True:
                    text = ws.recv(timeout=quiet)
                    out["messages"] += 1
                    try:
                        body = json.loads(text)
                    except ValueError:
                        continue
                    # Orders read: those whose content came (Creates and Updates); a StorePOS
                    # terminal's connect sequence also names every uuid in a Remove first.
                    if isinstance(body, dict) and isinstance(body.get("orders"), list) and body.get("operation") != 2:
                        out["orders_read"] += len(body["orders"])
                        if enough is not None and out["orders_read"] >= enough:
                            break
            except ConnectionClosed as closed:
                out["close"] = {"code": closed.rcvd.code if closed.rcvd else None,
                                "reason": closed.rcvd.reason if closed.rcvd else ""}
            except TimeoutError:
                out["close"] = {"code": None, "reason": f"still open after {quiet} s of silence"}
    except (InvalidHandshake, OSError) as error:
        out["close"] = {"code": None, "reason": f"{type(error).__name__}: {error}"}
    out["seconds"] = time.monotonic() - started
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
