"""Creates N orders through a slave's local API, one request each, and prints a JSON summary:
how many were acknowledged (200/201/202) and their uuids. Usage: offline_writer.py SOCKET N PREFIX"""

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
        self.sock.connect(self.unix_path)


path, count, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
conn = UnixHTTPConnection(path)
acked, statuses = [], {}
started = time.time()
for i in range(count):
    u = str(uuid.uuid4()).upper()
    conn.request("POST", "/v1/orders", body=json.dumps({"uuid": u, "customerName": f"{prefix}-{i}"}),
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    response.read()
    statuses[response.status] = statuses.get(response.status, 0) + 1
    if response.status in (200, 201, 202):
        acked.append(u)
print(json.dumps({"acked": acked, "statuses": statuses, "seconds": time.time() - started}))
