"""Opens many TCP connections to a master and sends nothing (half-open clients), then reports
how many the master closed. Usage: resil_flood.py HOST PORT COUNT WAIT_SECONDS"""

import json
import selectors
import socket
import sys
import time

host, port, count, wait = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
socks = []
for _ in range(count):
    s = socket.create_connection((host, port), timeout=5)
    s.setblocking(False)
    socks.append(s)
print(json.dumps({"opened": len(socks)}), flush=True)
sel = selectors.DefaultSelector()
for s in socks:
    sel.register(s, selectors.EVENT_READ)
closed = 0
deadline = time.time() + wait
first_close = None
while closed < len(socks) and time.time() < deadline:
    for key, _ in sel.select(timeout=max(0.0, deadline - time.time())):
        try:
            data = key.fileobj.recv(4096)
        except OSError:
            data = b""
        if not data:
            sel.unregister(key.fileobj)
            key.fileobj.close()
            closed += 1
            first_close = first_close or time.time()
print(json.dumps({"closed": closed}), flush=True)
