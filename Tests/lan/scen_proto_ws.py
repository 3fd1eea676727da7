"""A scriptable StorePOS-style terminal: WebSocket clients (Python `websockets`, no subprotocol,
no extensions) and raw TCP probes, driven by JSON lines on stdin; everything that happens is
reported as JSON lines on stdout. Run it "on" a LAN host; the scenario tests drive it.

Commands (one JSON object per line, each with a connection ``id``):

    {"cmd":"connect","id":"a","url":"ws://10.231.7.1:7420/"}
    {"cmd":"send","id":"a","text":"{...}"}
    {"cmd":"send_binary","id":"a","hex":"0102"}
    {"cmd":"send_big","id":"a","bytes":2097152}      # one text message of that many bytes
    {"cmd":"send_fragments","id":"a","parts":["{\"opera","tion\":0,..."]}   # one message, one frame each
    {"cmd":"ping","id":"a"}                           # waits for the pong
    {"cmd":"close","id":"a"}
    {"cmd":"tcp_idle","id":"t","host":"10.231.7.1","port":7420}   # connect, send nothing
    {"cmd":"http","id":"h","host":"10.231.7.1","port":7420,"request":"GET / HTTP/1.1\\r\\n..."}
    {"cmd":"quit"}

Events: ``connected`` / ``connect_failed``, ``message`` (``text``), ``pong`` (``elapsed``),
``closed`` (``code``,
``reason``, ``by``), ``tcp_closed`` (``elapsed`` seconds after connecting), ``http_answer``
(``text``, ``elapsed``, ``eof``), ``error``.
"""

import asyncio
import json
import sys
import time

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed


def emit(**event) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def close_info(error: ConnectionClosed) -> dict:
    if error.rcvd is not None:
        return {"code": error.rcvd.code, "reason": error.rcvd.reason, "by": "peer"}
    if error.sent is not None:
        return {"code": error.sent.code, "reason": error.sent.reason, "by": "us"}
    return {"code": None, "reason": "", "by": "abnormal"}


class Driver:
    def __init__(self) -> None:
        self.connections = {}
        self.locks = {}
        self.tasks = set()

    def spawn(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def reader(self, cid: str, ws) -> None:
        try:
            async for message in ws:
                if isinstance(message, bytes):
                    emit(ev="message", id=cid, binary=message.hex())
                else:
                    emit(ev="message", id=cid, text=message)
            emit(ev="closed", id=cid, code=ws.close_code, reason=ws.close_reason or "", by="peer")
        except ConnectionClosed as error:
            emit(ev="closed", id=cid, **close_info(error))
        except Exception as error:  # noqa: BLE001 - reported to the test
            emit(ev="error", id=cid, error=repr(error))

    async def connect(self, cid: str, url: str) -> None:
        try:
            ws = await connect(url, compression=None, max_size=None, ping_interval=None,
                               open_timeout=10, close_timeout=5)
        except Exception as error:  # noqa: BLE001
            emit(ev="connect_failed", id=cid, error=repr(error))
            return
        self.connections[cid] = ws
        emit(ev="connected", id=cid, subprotocol=ws.subprotocol,
             extensions=[e.name for e in getattr(ws.protocol, "extensions", [])])
        self.spawn(self.reader(cid, ws))

    async def send(self, cid: str, data) -> None:
        # One lock per connection keeps the messages in the order the commands came.
        lock = self.locks.setdefault(cid, asyncio.Lock())
        try:
            async with lock:
                await self.connections[cid].send(data)
            emit(ev="sent", id=cid)
        except ConnectionClosed as error:
            emit(ev="send_failed", id=cid, **close_info(error))
        except Exception as error:  # noqa: BLE001
            emit(ev="send_failed", id=cid, error=repr(error))

    async def ping(self, cid: str) -> None:
        started = time.monotonic()
        try:
            waiter = await self.connections[cid].ping()
            await asyncio.wait_for(waiter, timeout=10)
            emit(ev="pong", id=cid, elapsed=time.monotonic() - started)
        except Exception as error:  # noqa: BLE001
            emit(ev="ping_failed", id=cid, error=repr(error))

    async def tcp_idle(self, cid: str, host: str, port: int) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        started = time.monotonic()
        emit(ev="tcp_connected", id=cid)
        try:
            data = await asyncio.wait_for(reader.read(65536), timeout=30)
            while data:
                data = await asyncio.wait_for(reader.read(65536), timeout=30)
            emit(ev="tcp_closed", id=cid, elapsed=time.monotonic() - started)
        except (ConnectionResetError, BrokenPipeError):
            emit(ev="tcp_closed", id=cid, elapsed=time.monotonic() - started, reset=True)
        except asyncio.TimeoutError:
            emit(ev="tcp_open_after", id=cid, elapsed=time.monotonic() - started)
        finally:
            writer.close()

    async def http(self, cid: str, host: str, port: int, request: str) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        started = time.monotonic()
        writer.write(request.encode())
        await writer.drain()
        received = b""
        eof = False
        try:
            while b"\r\n\r\n" not in received or not eof:
                chunk = await asyncio.wait_for(reader.read(65536), timeout=10)
                if not chunk:
                    eof = True
                    break
                received += chunk
        except asyncio.TimeoutError:
            pass
        except ConnectionResetError:
            eof = True
        emit(ev="http_answer", id=cid, text=received.decode("latin-1"), eof=eof,
             elapsed=time.monotonic() - started)
        writer.close()

    async def handle(self, command: dict) -> bool:
        cmd, cid = command.get("cmd"), command.get("id", "")
        if cmd == "connect":
            self.spawn(self.connect(cid, command["url"]))
        elif cmd == "send":
            self.spawn(self.send(cid, command["text"]))
        elif cmd == "send_binary":
            self.spawn(self.send(cid, bytes.fromhex(command["hex"])))
        elif cmd == "send_big":
            size = int(command["bytes"])
            self.spawn(self.send(cid, '{"operation":0,"orders":[],"pad":"' + "x" * (size - 40) + '"}'))
        elif cmd == "send_fragments":
            self.spawn(self.send(cid, list(command["parts"])))
        elif cmd == "ping":
            self.spawn(self.ping(cid))
        elif cmd == "close":
            ws = self.connections.get(cid)
            if ws is not None:
                self.spawn(ws.close())
        elif cmd == "tcp_idle":
            self.spawn(self.tcp_idle(cid, command["host"], int(command["port"])))
        elif cmd == "http":
            self.spawn(self.http(cid, command["host"], int(command["port"]), command["request"]))
        elif cmd == "quit":
            return False
        else:
            emit(ev="error", id=cid, error=f"unknown command {cmd!r}")
        return True

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        emit(ev="ready")
        while True:
            line = await reader.readline()
            if not line:
                break
            if not line.strip():
                continue
            if not await self.handle(json.loads(line)):
                break
        for ws in list(self.connections.values()):
            try:
                await asyncio.wait_for(ws.close(), timeout=2)
            except Exception:  # noqa: BLE001
                pass


if __name__ == "__main__":
    asyncio.run(Driver().run())
