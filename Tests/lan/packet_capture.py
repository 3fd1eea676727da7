"""Captures the TCP traffic of one port on one interface with an AF_PACKET raw socket (no
tcpdump needed), run "on" a simulated host so it sees that host's veth only.

    packet_capture.py --interface os1a2b-v1 --port 7420 --out /tmp/x/capture

Prints ``capturing`` once the socket is bound, then captures until a line arrives on stdin.
Writes each direction's TCP payload (segments in capture order, retransmissions dropped by
sequence number) to OUT.to-port and OUT.from-port and prints one JSON summary: frames, TCP
segments, payload bytes, connections seen.
"""

import argparse
import json
import select
import socket
import struct
import sys

ETH_P_ALL = 0x0003


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--interface", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((args.interface, 0))
    sock.setblocking(False)
    print("capturing", flush=True)
    streams: dict[tuple, dict] = {}
    counts = {"frames": 0, "segments": 0}

    def take(frame: bytes) -> None:
        counts["frames"] += 1
        if len(frame) < 34 or struct.unpack("!H", frame[12:14])[0] != 0x0800:
            return
        ip = frame[14:]
        header_length = (ip[0] & 0x0F) * 4
        total_length = struct.unpack("!H", ip[2:4])[0]
        if ip[9] != 6:
            return
        tcp = ip[header_length:total_length]
        source_port, destination_port, sequence = struct.unpack("!HHI", tcp[:8])
        if args.port not in (source_port, destination_port):
            return
        payload = tcp[(tcp[12] >> 4) * 4:]
        counts["segments"] += 1
        key = (socket.inet_ntoa(ip[12:16]), source_port, socket.inet_ntoa(ip[16:20]), destination_port)
        stream = streams.setdefault(key, {"seen": set(), "data": []})
        # A retransmitted segment carries a sequence number already seen: kept once.
        if payload and sequence not in stream["seen"]:
            stream["seen"].add(sequence)
            stream["data"].append(payload)

    def drain() -> None:
        while True:
            try:
                take(sock.recv(65_536))
            except BlockingIOError:
                return

    while True:
        ready, _, _ = select.select([sock, sys.stdin], [], [], 1)
        if sock in ready:
            drain()
        if sys.stdin in ready:
            sys.stdin.readline()
            drain()
            break
    to_port = b"".join(b"".join(s["data"]) for k, s in streams.items() if k[3] == args.port)
    from_port = b"".join(b"".join(s["data"]) for k, s in streams.items() if k[1] == args.port)
    with open(args.out + ".to-port", "wb") as f:
        f.write(to_port)
    with open(args.out + ".from-port", "wb") as f:
        f.write(from_port)
    connections = {k[:2] if k[3] == args.port else k[2:] for k in streams}
    print(json.dumps({"frames": counts["frames"], "segments": counts["segments"], "bytes": len(to_port) + len(from_port),
                      "bytes_to_port": len(to_port), "bytes_from_port": len(from_port),
                      "connections": len(connections)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
