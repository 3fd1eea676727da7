"""A slow WAN line as a TCP relay (this kernel has no `netem` qdisc): every byte relayed from a
connection made to LISTEN:PORT to TARGET:TPORT, and back, is held half of DELAY milliseconds (a
round trip of DELAY more) before it is passed on, in order, each direction on its own.

    wan_relay.py --listen 10.231.7.4 --target 10.231.7.4 --target-port 5432 --delay-ms 200

Prints ``relaying PORT`` once listening. A line ``fast`` on stdin ends the delay (bytes held are
still passed on in order); end of stdin stops the relay.
"""

import argparse
import collections
import socket
import sys
import threading
import time


class Line:
    """The delay every direction of every connection reads (changed by ``fast``)."""

    def __init__(self, delay: float):
        self.delay = delay


def pump(source: socket.socket, sink: socket.socket, line: Line) -> None:
    """Reads from ``source`` and writes to ``sink`` each chunk ``line.delay`` after it arrived."""
    held: collections.deque = collections.deque()
    ready = threading.Condition()
    closed = []

    def read() -> None:
        try:
            while True:
                data = source.recv(65_536)
                with ready:
                    held.append((time.monotonic(), data))
                    ready.notify()
                if not data:
                    return
        except OSError:
            with ready:
                held.append((0.0, b""))
                ready.notify()

    threading.Thread(target=read, daemon=True).start()
    try:
        while not closed:
            with ready:
                while not held:
                    ready.wait()
                arrived, data = held[0]
                wait = arrived + line.delay - time.monotonic()
                if wait > 0 and data:
                    # The line's latency: the chunk is on the wire until then (looked at again
                    # within 50 ms, as `fast` may end the delay meanwhile).
                    ready.wait(min(wait, 0.05))
                    continue
                held.popleft()
            if not data:
                closed.append(True)
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s in (sink, source):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--target", required=True)
    parser.add_argument("--target-port", type=int, required=True)
    parser.add_argument("--delay-ms", type=int, default=200)
    args = parser.parse_args()
    line = Line(args.delay_ms / 2000)  # each way: half the round trip's delay
    server = socket.create_server((args.listen, args.port))

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
            threading.Thread(target=pump, args=(client, upstream, line), daemon=True).start()
            threading.Thread(target=pump, args=(upstream, client, line), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    print(f"relaying {server.getsockname()[1]}", flush=True)
    for command in sys.stdin:
        if command.strip() == "fast":
            line.delay = 0.0
    return 0


if __name__ == "__main__":
    sys.exit(main())
