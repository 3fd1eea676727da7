"""Creates orders through a node's local API as fast as it answers, for a fixed time, and prints
one JSON line per order: its uuid and whether the API acknowledged it (HTTP 201/200).
Usage: burst_writer.py SOCKET_PATH SECONDS PREFIX"""

import http.client
import json
import socket
import sys
import time
import uuid


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(self.unix_path)


path, seconds, prefix = sys.argv[1], float(sys.argv[2]), sys.argv[3]
deadline = time.time() + seconds
n = 0
while time.time() < deadline:
    u = str(uuid.uuid4()).upper()
    body = json.dumps({"uuid": u, "customerName": f"{prefix}-{n}"})
    status = None
    try:
        conn = UnixHTTPConnection(path)
        conn.request("POST", "/v1/orders", body=body, headers={"Content-Type": "application/json"})
        status = conn.getresponse().status
        conn.close()
    except OSError:
        status = None
    print(json.dumps({"uuid": u, "acked": status in (200, 201, 202), "status": status}), flush=True)
    n += 1
    if status not in (200, 201, 202):
        time.sleep(0.05)  # the master is away: do not hammer the local API while it says 503
