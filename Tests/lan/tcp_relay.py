"""A relaying TCP proxy (a device in the middle of the store's LAN): forwards every connection
made to LISTEN:PORT to TARGET:TPORT and keeps every byte it relays, in each direction.

    tcp_relay.py --listen 10.231.7.3 --port 17850 --target 10.231.7.1 --target-port 7420 --out /tmp/x/relay

Prints ``relaying PORT`` once listening; on a line on stdin it stops, writes OUT.up (client to
target) and OUT.down (target to client) and prints {"connections", "bytes_up", "bytes_down"}.
"""

import argparse
import json
import socket
import sys
import threading


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--target", required=True)
    parser.add_argument("--target-port", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    server = socket.create_server((args.listen, args.port))
    lock = threading.Lock()
    relayed = {"up": bytearray(), "down": bytearray(), "connections": 0}

    def pump(source: socket.socket, sink: socket.socket, direction: str) -> None:
        try:
            while True:
                data = source.recv(65_536)
                if not data:
                    break
                with lock:
                    relayed[direction] += data
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (sink, source):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def accept() -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection((args.target, args.target_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with lock:
                relayed["connections"] += 1
            threading.Thread(target=pump, args=(client, upstream, "up"), daemon=True).start()
            threading.Thread(target=pump, args=(upstream, client, "down"), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    print(f"relaying {server.getsockname()[1]}", flush=True)
    sys.stdin.readline()
    with lock:
        for direction in ("up", "down"):
            with open(f"{args.out}.{direction}", "wb") as f:
                f.write(relayed[direction])
        print(json.dumps({"connections": relayed["connections"], "bytes_up": len(relayed["up"]),
                          "bytes_down": len(relayed["down"])}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
