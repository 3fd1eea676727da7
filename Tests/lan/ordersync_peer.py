"""An OrderSync slave written against Docs/PROTOCOL.md with Python `websockets` (not the
project's WebSocket layer): runs a script of steps on one link and prints what it received.

    ordersync_peer.py URL STEPS_JSON

STEPS_JSON is a list of {"send": <object>} and {"until": <condition>} steps; a condition waits
for a message: {"type": "ready"}, {"type": "result", "opId": "…"}, {"type": "error"} or
{"type": "close"}. Prints {"received": [...], "close": {"code", "reason"} | null} as JSON.
"""

import json
import sys

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect


def matches(message: dict, condition: dict) -> bool:
    return all(message.get(k) == v for k, v in condition.items())


def main() -> None:
    url, steps = sys.argv[1], json.loads(sys.argv[2])
    received: list[dict] = []
    close = None
    with connect(url, subprotocols=["ordersync.v1"], open_timeout=10, close_timeout=5, max_size=None) as ws:
        assert ws.subprotocol == "ordersync.v1", ws.subprotocol
        try:
            for step in steps:
                if "send" in step:
                    ws.send(json.dumps(step["send"]))
                    continue
                condition = step["until"]
                while True:
                    try:
                        message = json.loads(ws.recv(timeout=15))
                    except ConnectionClosed as closed:
                        close = {"code": closed.rcvd.code if closed.rcvd else None,
                                 "reason": closed.rcvd.reason if closed.rcvd else ""}
                        if condition.get("type") == "close":
                            break
                        raise
                    received.append(message)
                    if matches(message, condition):
                        break
                if close:
                    break
        finally:
            print(json.dumps({"received": received, "close": close}))


if __name__ == "__main__":
    main()
