"""A plain StorePOS client (Python `websockets`, no subprotocol) that takes its connect
sequence, then sends one operation message and reads what follows.

    storepos_bulk_client.py URL MESSAGE_FILE [QUIET]

It reads until QUIET seconds (default 1.5) pass without a message (the connect sequence is
over), sends the JSON message of MESSAGE_FILE as one WebSocket message, then reads again until
QUIET seconds of silence. Prints one JSON object: `connect_messages`, `after_messages`,
`sent_bytes`, `close` (`code`, `reason`, or null while the link stayed open) and `seconds`
from the send to the last message read.
"""

import json
import sys
import time

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect


def read_until_quiet(ws, quiet: float) -> int:
    """Messages read until `quiet` seconds pass without one."""
    count = 0
    while True:
        try:
            ws.recv(timeout=quiet)
        except TimeoutError:
            return count
        count += 1


def main() -> int:
    url, path = sys.argv[1], sys.argv[2]
    quiet = float(sys.argv[3]) if len(sys.argv) > 3 else 1.5
    with open(path) as f:
        text = f.read()
    out = {"connect_messages": 0, "after_messages": 0, "sent_bytes": len(text.encode()), "close": None, "seconds": None}
    with connect(url, open_timeout=10, close_timeout=2, max_size=None, compression=None) as ws:
        try:
            out["connect_messages"] = read_until_quiet(ws, quiet)
            sent = time.monotonic()
            ws.send(text)
            out["after_messages"] = read_until_quiet(ws, quiet)
            out["seconds"] = time.monotonic() - sent - quiet
        except ConnectionClosed as closed:
            out["close"] = {"code": closed.rcvd.code if closed.rcvd else None,
                            "reason": closed.rcvd.reason if closed.rcvd else ""}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
