#!/usr/bin/env python3
"""Writes the seed corpora in Fuzz/corpus/<Target>/ (run from anywhere; standard library only).

The seeds are small and named after what they show: the RFC 6455 section 5.7 example frames,
fragmented messages, close frames and framing errors (each unmasked, as a server sends, and
masked, as a client sends); the RFC 6455 section 1.2/1.3 handshake and variations of it; and
the StorePOS and OrderSync messages from Docs/PROTOCOL.md; HTTP/1.1 requests as the dashboard,
the metrics listener and the local API receive them. Re-running rewrites the directories.
"""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
KEY = bytes([0x37, 0xFA, 0x21, 0x3D])  # the masking key of the RFC 6455 5.7 examples


def frame(opcode, payload=b"", fin=True, rsv=0, mask=None, length_form=None):
    """One frame; `length_form` forces a 16- or 64-bit length field (even a non-minimal one)."""
    head = bytearray([(0x80 if fin else 0) | rsv | opcode])
    n = len(payload)
    form = length_form or (7 if n < 126 else 16 if n <= 0xFFFF else 64)
    bit = 0x80 if mask else 0
    if form == 7:
        head.append(bit | n)
    elif form == 16:
        head.append(bit | 126)
        head += struct.pack(">H", n)
    else:
        head.append(bit | 127)
        head += struct.pack(">Q", n)
    if mask:
        head += mask
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes(head) + payload


def close_payload(code, reason=b""):
    return struct.pack(">H", code) + reason


# Each sequence is a list of frame() argument tuples: (opcode, payload, fin, rsv, length_form).
FRAME_SEQUENCES = {
    "hello": [(0x1, b"Hello")],
    "fragmented-hello": [(0x1, b"Hel", False), (0x0, b"lo")],
    "ping-hello": [(0x9, b"Hello")],
    "pong-hello": [(0xA, b"Hello")],
    "binary-256": [(0x2, bytes(range(256)))],
    "empty-text": [(0x1, b"")],
    "empty-binary-then-text": [(0x2, b""), (0x1, b"ok")],
    "ping-between-fragments": [(0x1, b"frag", False), (0x9, b"p"), (0x0, b"ment", False), (0x0, b"!")],
    "five-fragments": [(0x2, b"a", False), (0x0, b"b", False), (0x0, b"c", False), (0x0, b"d", False), (0x0, b"e")],
    "utf8-split-across-fragments": [(0x1, "κό".encode()[:3], False), (0x0, "κό".encode()[3:])],
    "utf8-4-byte": [(0x1, "order \U0001F355 ready".encode())],
    "invalid-utf8": [(0x1, b"ab\xc0\xafcd")],
    "invalid-utf8-in-continuation": [(0x1, b"ok", False), (0x0, b"\xed\xa0\x80")],
    "truncated-utf8-final": [(0x1, b"abc\xe2\x82")],
    "close-empty": [(0x8, b"")],
    "close-1000": [(0x8, close_payload(1000))],
    "close-1001-reason": [(0x8, close_payload(1001, b"going away"))],
    "close-1005-invalid": [(0x8, close_payload(1005))],
    "close-999-invalid": [(0x8, close_payload(999))],
    "close-3000": [(0x8, close_payload(3000, b"app"))],
    "close-one-byte": [(0x8, b"\x03")],
    "close-bad-reason": [(0x8, close_payload(1000, b"\xff\xfe"))],
    "text-after-close": [(0x8, close_payload(1000)), (0x1, b"late")],
    "continuation-without-start": [(0x0, b"orphan")],
    "text-inside-fragmented": [(0x1, b"one", False), (0x1, b"two")],
    "reserved-bit": [(0x1, b"rsv", True, 0x40)],
    "reserved-opcode-3": [(0x3, b"")],
    "reserved-opcode-b": [(0xB, b"")],
    "fragmented-ping": [(0x9, b"p", False)],
    "ping-126-bytes": [(0x9, b"x" * 126)],
    "non-minimal-16": [(0x1, b"short", True, 0, 16)],
    "non-minimal-64": [(0x2, b"x" * 200, True, 0, 64)],
    "frame-200-bytes": [(0x2, b"y" * 200)],
    "message-400-bytes": [(0x2, b"z" * 150, False), (0x0, b"z" * 150, False), (0x0, b"z" * 100)],
    "orders-json": [(0x1, b'{"operation":0,"orders":[]}')],
}


def frame_corpus():
    seeds = {}
    for name, sequence in FRAME_SEQUENCES.items():
        for suffix, mask in (("server-sent", None), ("client-sent", KEY)):
            data = b""
            for item in sequence:
                opcode, payload = item[0], item[1]
                fin = item[2] if len(item) > 2 else True
                rsv = item[3] if len(item) > 3 else 0
                form = item[4] if len(item) > 4 else None
                data += frame(opcode, payload, fin, rsv, mask, form)
            seeds[f"{name}-{suffix}"] = data
    # Headers whose payload never arrives, and lengths no peer may announce.
    seeds["length-64k-header-only"] = b"\x82\x7f" + struct.pack(">Q", 65536) + b"abc"
    seeds["length-top-bit-set"] = b"\x82\xff" + struct.pack(">Q", 1 << 63) + KEY
    seeds["length-1gib-masked"] = b"\x82\xff" + struct.pack(">Q", 1 << 30) + KEY + b"abcd"
    seeds["two-bytes-of-header"] = b"\x81\x85"
    return seeds


RFC_REQUEST = (
    "GET /chat HTTP/1.1\r\n"
    "Host: server.example.com\r\n"
    "Upgrade: websocket\r\n"
    "Connection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Origin: http://example.com\r\n"
    "Sec-WebSocket-Protocol: chat, superchat\r\n"
    "Sec-WebSocket-Version: 13\r\n"
    "\r\n"
)
ORDERSYNC_REQUEST = (
    "GET / HTTP/1.1\r\n"
    "Host: 10.0.0.1:8765\r\n"
    "Upgrade: websocket\r\n"
    "Connection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Sec-WebSocket-Version: 13\r\n"
    "Sec-WebSocket-Protocol: ordersync.v1\r\n"
    "\r\n"
)
RFC_RESPONSE = (
    "HTTP/1.1 101 Switching Protocols\r\n"
    "Upgrade: websocket\r\n"
    "Connection: Upgrade\r\n"
    "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
    "Sec-WebSocket-Protocol: chat\r\n"
    "\r\n"
)


def handshake_corpus():
    r = RFC_REQUEST
    o = ORDERSYNC_REQUEST
    s = RFC_RESPONSE
    seeds = {
        "rfc-request": r,
        "ordersync-request": o,
        "storepos-request-no-protocol": o.replace("Sec-WebSocket-Protocol: ordersync.v1\r\n", ""),
        "request-lowercase-headers": o.lower().replace("get / http/1.1", "GET / HTTP/1.1")
        .replace("dghlihnhbxbszsbub25jzq==", "dGhlIHNhbXBsZSBub25jZQ=="),
        "request-token-lists": o.replace("Connection: Upgrade", "Connection: keep-alive, Upgrade")
        .replace("Upgrade: websocket", "Upgrade: h2c, WebSocket"),
        "request-version-8": o.replace("Version: 13", "Version: 8"),
        "request-two-versions": o.replace("Version: 13", "Version: 13, 8"),
        "request-post": o.replace("GET", "POST", 1),
        "request-http10": o.replace("HTTP/1.1", "HTTP/1.0", 1),
        "request-http2": o.replace("HTTP/1.1", "HTTP/2.0", 1),
        "request-no-host": o.replace("Host: 10.0.0.1:8765\r\n", ""),
        "request-two-hosts": o.replace("Host: 10.0.0.1:8765\r\n", "Host: a\r\nHost: b\r\n"),
        "request-short-key": o.replace("dGhlIHNhbXBsZSBub25jZQ==", "c2hvcnQ="),
        "request-key-not-base64": o.replace("dGhlIHNhbXBsZSBub25jZQ==", "!!!!!!!!!!!!!!!!!!!!!!=="),
        "request-two-keys": o.replace("Sec-WebSocket-Version", "Sec-WebSocket-Key: AQIDBAUGBwgJCgsMDQ4PEA==\r\nSec-WebSocket-Version"),
        "request-no-upgrade": o.replace("Upgrade: websocket\r\n", ""),
        "request-connection-close": o.replace("Connection: Upgrade", "Connection: close"),
        "request-deflate": o.replace("\r\n\r\n", "\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"),
        "request-content-length": o.replace("\r\n\r\n", "\r\nContent-Length: 5\r\n\r\nhello"),
        "request-chunked": o.replace("\r\n\r\n", "\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        "request-folded-header": o.replace("Upgrade: websocket", "Upgrade:\r\n websocket"),
        "request-lf-only": o.replace("\r\n", "\n"),
        "request-absolute-uri": o.replace("GET /", "GET http://10.0.0.1:8765/", 1),
        "request-duplicate-protocols": o.replace("ordersync.v1", "chat, chat"),
        "request-space-before-colon": o.replace("Host:", "Host :"),
        "request-non-ascii-path": o.replace("GET /", "GET /\u00e9", 1),
        "request-nul-in-header": o.replace("Host:", "Ho\x00st:"),
        "request-line-only": "GET / HTTP/1.1\r\n",
        "rfc-response": s,
        "response-no-protocol": s.replace("Sec-WebSocket-Protocol: chat\r\n", ""),
        "response-ordersync": s.replace("chat", "ordersync.v1"),
        "response-unoffered-protocol": s.replace("chat", "superchat"),
        "response-wrong-accept": s.replace("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "AAAAAAAAAAAAAAAAAAAAAAAAAAA="),
        "response-deflate": s.replace("\r\n\r\n", "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n"),
        "response-200": "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        "response-426": "HTTP/1.1 426 Upgrade Required\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n",
        "response-no-reason": s.replace(" Switching Protocols", ""),
    }
    out = {name: text.encode("utf-8") for name, text in seeds.items()}
    # A frame pipelined right behind the head, on both sides.
    out["rfc-request-then-frame"] = RFC_REQUEST.encode() + frame(0x1, b"Hello", mask=KEY)
    out["rfc-response-then-frame"] = RFC_RESPONSE.encode() + frame(0x1, b"Hello")
    out["request-huge-header"] = o.replace("\r\n\r\n", "\r\nX-Pad: " + "p" * 300 + "\r\n\r\n").encode()
    return out


STOREPOS_PRETTY = """{
   "operation":0,
   "orders":[
      {
         "uuid":"9437C8F5-D742-46CB-9847-737C5809392C",
         "customerName":"Kevin",
         "created":"2016-01-12T21:35:16+0800",
         "shippingMethod":"DHL",
         "tableSize":-1
      },
      {
         "uuid":"E1CF0738-9400-4335-98AD-F882096C23C1",
         "customerName":"Kevin",
         "created":"2016-01-09T22:41:37+0800",
         "shippingMethod":"DHL",
         "tableSize":-1
      }
   ]
}
"""
KEVIN = ('{"uuid":"9437C8F5-D742-46CB-9847-737C5809392C","customerName":"Kevin",'
         '"created":"2016-01-12T21:35:16+0800","shippingMethod":"DHL","tableSize":-1}')
ANN = '{"uuid":"0f8fad5b-d9cb-469f-a165-70867728950e","customerName":"Ann","tableName":"T4","tableSize":4}'
NEW = '{"uuid":"7c9e6679-7425-40de-944b-e07fc1f90ae7","customerName":"Zoe","created":"2024-05-01T09:30:00.250+02:00"}'


def sync_corpus():
    seeds = {
        "storepos-create-pretty": STOREPOS_PRETTY,
        "storepos-create": '{"operation":0,"orders":[%s]}' % KEVIN,
        "storepos-update": '{"operation":1,"orders":[{"uuid":"9437c8f5-d742-46cb-9847-737c5809392c","tableSize":6}]}',
        "storepos-remove": '{"operation":2,"orders":[{"uuid":"E1CF0738-9400-4335-98AD-F882096C23C1"}]}',
        "create-new-rfc3339": '{"operation":0,"orders":[%s]}' % NEW,
        "create-then-update-same": '{"operation":0,"orders":[%s,%s]}' % (NEW, NEW.replace("Zoe", "Zed")),
        "update-clears-fields": '{"operation":1,"orders":[{"uuid":"0f8fad5b-d9cb-469f-a165-70867728950e","tableName":null,"tableSize":null,"note":null}]}',
        "create-extra-members": '{"operation":0,"orders":[{"uuid":"7c9e6679-7425-40de-944b-e07fc1f90ae7","items":[{"sku":"A1","qty":2.0,"price":1.5e2}],"paid":true,"tip":null}]}',
        "create-bad-fields": '{"operation":0,"orders":[{"uuid":"not-a-uuid"},{"uuid":5},{},7,{"uuid":"7c9e6679-7425-40de-944b-e07fc1f90ae7","tableSize":100001,"created":"2016-02-30T00:00:00Z"}]}',
        "update-not-found": '{"operation":1,"orders":[{"uuid":"00000000-0000-0000-0000-000000000000","customerName":"X"}]}',
        "with-opid": '{"operation":1,"orders":[%s],"opId":"1b0c2a8e-5b1a-4c1e-9d1a-3f2b7c6d5e4f"}' % KEVIN,
        "operation-3": '{"operation":3,"orders":[]}',
        "operation-string": '{"operation":"0","orders":[]}',
        "operation-double": '{"operation":1.0,"orders":[]}',
        "hello": '{"type":"hello","proto":"ordersync/1","terminal":"t-1","name":"bar-2","store":"shop1","lastSeq":41,"epoch":"e1"}',
        "hello-minimal": '{"type":"hello","terminal":"t-2","lastSeq":-5}',
        "unknown-type": '{"type":"bye"}',
        "broadcast": '{"operation":1,"orders":[{"uuid":"9437C8F5-D742-46CB-9847-737C5809392C","customerName":"Kevin","created":"2016-01-12T21:35:16+0800","tableSize":6,"version":2}],"seq":42,"opId":"1b0c2a8e","origin":"bar-2@10.0.0.2:53314"}',
        "snapshot": '{"operation":0,"orders":[%s],"snapshot":{"seq":41,"part":1,"parts":3,"epoch":"e1"}}'
        % KEVIN.replace("}", ',"version":1}'),
        "broadcast-remove-uuid-only": '{"operation":2,"orders":[{"uuid":"9437C8F5-D742-46CB-9847-737C5809392C"}],"seq":43}',
        "ready": '{"type":"ready","seq":41,"epoch":"e1","store":"shop1"}',
        "error": '{"type":"error","code":"not_found","message":"no order with this uuid to update","uuid":"9437C8F5-D742-46CB-9847-737C5809392C","index":0,"opId":"1b0c2a8e","operation":1}',
        "error-unknown-code": '{"type":"error","code":"teapot","message":"?"}',
        "result": '{"type":"result","opId":"1b0c2a8e","seq":42,"applied":1,"unchanged":0,"failed":0}',
        "result-null-seq": '{"type":"result","opId":"1b0c2a8e","seq":null,"applied":0,"unchanged":1,"failed":0}',
        "json-numbers": '[0,-0,1.0,-0.0,1e2,1E-2,123456789012345678901234567890,-9223372036854775808,9223372036854775807,1e308,5e-324]',
        "json-number-overflow": '[1e400]',
        "json-escapes": '["\\u00e9\\ud83c\\udf55\\n\\t\\"\\\\\\/\\b\\f\\r\\u2028\\u0000"]',
        "json-lone-surrogate": '["\\ud800"]',
        "json-duplicate-key": '{"a":1,"a":2}',
        "json-canonical-keys": '{"\\u00e9":1,"e\\u0301":2}',
        "json-nested-64": "[" * 64 + "]" * 64,
        "json-nested-65": "[" * 65 + "]" * 65,
        "json-trailing-garbage": '{"operation":0,"orders":[]} x',
        "json-literals": '[true,false,null]',
        "not-json": "operation=0",
        "too-many-orders": '{"operation":2,"orders":[%s]}' % ",".join(["{}"] * 1001),
    }
    out = {name: text.encode("utf-8") for name, text in seeds.items()}
    out["invalid-utf8"] = b'{"operation":0,"orders":[{"uuid":"\xff\xfe"}]}'
    return out


def http_request_corpus():
    """Requests a LAN peer sends the dashboard and the metrics listener, and the local API's,
    with the framing edge cases of RFC 9112 (pipelining, bodies, bare LF, HTTP/1.0, errors)."""
    body = b'{"customerName":"Ann","tableSize":4}'
    seeds = {
        "get-dashboard": b"GET / HTTP/1.1\r\nHost: 10.0.0.1:8090\r\nAccept: text/html\r\n\r\n",
        "get-metrics": b"GET /metrics HTTP/1.1\r\nHost: 10.0.0.1:9464\r\nAccept: text/plain;version=0.0.4\r\n"
                       b"Connection: close\r\n\r\n",
        "get-status-query": b"GET /v1/orders?limit=10&after=9437C8F5-D742-46CB-9847-737C5809392C&q=a+b%20c HTTP/1.1\r\n"
                            b"Host: localhost\r\n\r\n",
        "post-body": b"POST /v1/orders HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body),
        "patch-if-match": b"PATCH /v1/orders/0f8fad5b-d9cb-469f-a165-70867728950e HTTP/1.1\r\nHost: localhost\r\n"
                          b"If-Match: \"3\"\r\nContent-Length: 2\r\n\r\n{}",
        "pipelined-three": b"GET /a HTTP/1.1\r\nHost: h\r\n\r\nHEAD /b HTTP/1.1\r\nHost: h\r\n\r\n"
                           b"DELETE /c HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
        "http10-keep-alive": b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        "http10-no-host": b"GET /metrics HTTP/1.0\r\n\r\n",
        "bare-lf": b"GET / HTTP/1.1\nHost: h\n\n",
        "leading-empty-lines": b"\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
        "absolute-form": b"GET http://10.0.0.1:8090/v1/status?x=1 HTTP/1.1\r\nHost: 10.0.0.1:8090\r\n\r\n",
        "asterisk-form": b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
        "folded-header": b"GET / HTTP/1.1\r\nHost: h\r\nX-A: one\r\n two\r\n\r\n",
        "missing-host": b"GET / HTTP/1.1\r\n\r\n",
        "two-hosts": b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "two-lengths": b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        "length-list": b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2, 2\r\n\r\nab",
        "length-signed": b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +2\r\n\r\nab",
        "length-huge": b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "chunked": b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n",
        "http2-preface": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        "space-in-name": b"GET / HTTP/1.1\r\nHost : h\r\n\r\n",
        "percent-bad": b"GET /%zz/%2F%00 HTTP/1.1\r\nHost: h\r\n\r\n",
        "fragment": b"GET /v1/status#top HTTP/1.1\r\nHost: h\r\n\r\n",
        "obs-text-value": b"GET / HTTP/1.1\r\nHost: h\r\nUser-Agent: caf\xe9\r\n\r\n",
        "nul-in-target": b"GET /a\x00b HTTP/1.1\r\nHost: h\r\n\r\n",
    }
    return seeds


def write(target, seeds):
    directory = os.path.join(HERE, "corpus", target)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    for name, data in sorted(seeds.items()):
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    print(f"{target}: {len(seeds)} seeds, {sum(map(len, seeds.values()))} bytes")


if __name__ == "__main__":
    write("FuzzFrameParser", frame_corpus())
    write("FuzzHandshake", handshake_corpus())
    write("FuzzSyncMessage", sync_corpus())
    write("FuzzHTTPRequest", http_request_corpus())
