"""HTTP over a node's Unix socket for `requests` (and so for schemathesis) and for http.client."""

from __future__ import annotations

import http.client
import socket

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool


class _UnixConnection(HTTPConnection):
    def __init__(self, *args, unix_path: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.unix_path = unix_path

    def _new_conn(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout if isinstance(self.timeout, (int, float)) else 30)
        sock.connect(self.unix_path)
        return sock


class _UnixPool(HTTPConnectionPool):
    ConnectionCls = _UnixConnection


class UnixAdapter(HTTPAdapter):
    """Sends every request of a session to one Unix socket, whatever the URL's host."""

    def __init__(self, path: str):
        super().__init__()
        self.pool = _UnixPool("localhost", maxsize=1, timeout=30, unix_path=path)

    def get_connection_with_tls_context(self, request, verify, proxies=None, cert=None):
        return self.pool

    def get_connection(self, url, proxies=None):
        return self.pool

    def close(self):
        self.pool.close()
        super().close()


def unix_session(path: str) -> requests.Session:
    """A `requests` session whose `http://localhost/...` requests go to the socket `path`."""
    session = requests.Session()
    session.mount("http://", UnixAdapter(path))
    session.trust_env = False
    return session


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a Unix socket."""

    def __init__(self, path: str, timeout: float = 30):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def raw_exchange(path: str, request: bytes, timeout: float = 10) -> bytes:
    """Sends `request` as is and reads until the node closes the connection (send `Connection: close`)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(request)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
