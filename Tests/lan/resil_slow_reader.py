"""A WebSocket client that completes the handshake and then never reads: the master must drop it
once its send buffer limit is reached, instead of growing its memory. Prints when the master
closed the TCP connection (as seen by a final read). Usage: resil_slow_reader.py HOST PORT"""

import base64
import os
import socket
import sys
import time

host, port = sys.argv[1], int(sys.argv[2])
s = socket.create_connection((host, port), timeout=10)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
print("connected", flush=True)
sys.stdin.readline()          # the test says when to start reading again
s.settimeout(30)
total, start = 0, time.time()
try:
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        total += len(chunk)
except OSError:
    pass
print(f"closed after reading {total} bytes in {time.time() - start:.1f}s", flush=True)
