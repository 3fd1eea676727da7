"""The HTTP conventions of the local API (Docs/API.md, "HTTP conventions"), on the live Unix
socket of a master and of a slave, with http.client and raw bytes."""

from __future__ import annotations

import json
import uuid as uuidlib

import pytest

from unix_http import UnixHTTPConnection, raw_exchange

JSON = {"Content-Type": "application/json"}
ROLES = ["master", "slave"]


def call(store, role: str, method: str, path: str, body=None, headers: dict | None = None):
    """One request; returns (status, reason, headers as a dict, body bytes)."""
    conn = UnixHTTPConnection(store.socket(role))
    try:
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        conn.request(method, path, body=data, headers=headers if headers is not None else (JSON if data else {}))
        response = conn.getresponse()
        payload = response.read()
        return response.status, response.reason, {k.lower(): v for k, v in response.getheaders()}, payload
    finally:
        conn.close()


def error_code(payload: bytes) -> str:
    return json.loads(payload)["error"]["code"]


def new_uuid() -> str:
    return str(uuidlib.uuid4()).upper()


def settle(store, role: str) -> None:
    """A slave whose change the master refused takes the master's state again (it reconnects,
    Docs/API.md): writes answer `202` until it is live again. Waits for that."""
    if role == "slave":
        store.slave.wait_live()


def create(store, role: str, **fields) -> dict:
    settle(store, role)
    u = new_uuid()
    status, _, headers, payload = call(store, role, "POST", "/v1/orders", {"uuid": u, "customerName": "Kevin", **fields})
    assert status == 201, payload
    return json.loads(payload) | {"_headers": headers}


@pytest.mark.parametrize("role", ROLES)
def test_reason_phrases(store, role):
    order = create(store, role)
    assert call(store, role, "DELETE", f"/v1/orders/{order['uuid']}")[:2] == (200, "OK")
    # Created again after its removal: 410 went out as "Unknown" before.
    status, reason, _, payload = call(store, role, "POST", "/v1/orders", {"uuid": order["uuid"], "customerName": "x"})
    assert (status, reason, error_code(payload)) == (410, "Gone", "removed")
    assert call(store, role, "GET", f"/v1/orders/{new_uuid()}")[:2] == (404, "Not Found")
    assert call(store, role, "PUT", "/v1/status")[:2] == (405, "Method Not Allowed")
    assert call(store, role, "POST", "/v1/orders", b"{}", {"Content-Type": "text/plain"})[:2] == (415, "Unsupported Media Type")
    second = create(store, role)
    status, reason, _, _ = call(store, role, "PATCH", f"/v1/orders/{second['uuid']}", {"note": "x"}, JSON | {"If-Match": '"v9"'})
    assert (status, reason) == (412, "Precondition Failed")
    assert call(store, role, "POST", "/v1/orders", b"{", JSON)[:2] == (400, "Bad Request")


@pytest.mark.parametrize("role", ROLES)
def test_allow_on_every_405(store, role):
    u = new_uuid()
    for method, path, allow in [("PUT", "/v1/orders", "GET, HEAD, POST"), ("POST", f"/v1/orders/{u}", "GET, HEAD, PATCH, DELETE"),
                                ("GET", "/v1/operations", "POST"), ("DELETE", "/v1/status", "GET, HEAD"),
                                ("POST", "/v1/journal", "GET, HEAD"), ("PATCH", "/v1/rejections", "GET, HEAD"),
                                ("HEAD", "/v1/operations", "POST")]:
        status, _, headers, payload = call(store, role, method, path)
        assert status == 405, (method, path, status, payload)
        assert headers.get("allow") == allow, (method, path, headers)
        if method != "HEAD":
            assert error_code(payload) == "method_not_allowed"
    if role == "master":
        for method, path, allow in [("PATCH", "/v1/pairing", "GET, HEAD, POST, DELETE"), ("POST", "/v1/pairing/x", "DELETE"),
                                    ("POST", "/v1/terminals", "GET, HEAD"),
                                    ("GET", "/v1/key/rotate", "POST"), ("DELETE", "/v1/terminals/x/revoke", "POST")]:
            status, _, headers, _ = call(store, role, method, path)
            assert (status, headers.get("allow")) == (405, allow), (method, path)


@pytest.mark.parametrize("role", ROLES)
def test_location_on_201(store, role):
    order = create(store, role, tableName="T7")
    location = order["_headers"].get("location")
    assert location == f"/v1/orders/{order['uuid']}"
    status, _, _, payload = call(store, role, "GET", location)
    assert status == 200 and json.loads(payload)["tableName"] == "T7"
    if role == "master":
        status, _, headers, _ = call(store, role, "POST", "/v1/pairing", {"name": "till-9", "validForSeconds": 60})
        assert (status, headers.get("location")) == (201, "/v1/pairing")
        assert call(store, role, "DELETE", "/v1/pairing")[0] == 200


@pytest.mark.parametrize("role", ROLES)
def test_head_wherever_get_is(store, role):
    order = create(store, role)
    paths = [f"/v1/orders/{order['uuid']}", "/v1/orders?per=5", f"/v1/rejections?order={order['uuid']}",
             f"/v1/orders/{new_uuid()}", "/v1/orders?per=0"]
    paths += ["/v1/journal?limit=3", "/v1/terminals"] if role == "master" else ["/v1/journal"]
    for path in paths:
        got = call(store, role, "GET", path)
        head = call(store, role, "HEAD", path)
        assert head[0] == got[0], (path, head[0], got[0])
        assert head[3] == b"", path
        strip = {"date"}
        assert {k: v for k, v in head[2].items() if k not in strip} == {k: v for k, v in got[2].items() if k not in strip}, path
        assert int(head[2]["content-length"]) == len(got[3]), path
    # The metrics (text) have a head too.
    status, _, headers, payload = call(store, role, "HEAD", "/metrics")
    assert (status, payload) == (200, b"") and headers["content-type"].startswith("text/plain"), headers
    assert int(headers["content-length"]) > 100
    status, _, headers, _ = call(store, role, "POST", "/metrics")
    assert (status, headers.get("allow")) == (405, "GET, HEAD")
    # The status changes from one moment to the next (uptime); its head still has a length and no body.
    status, _, headers, payload = call(store, role, "HEAD", "/v1/status")
    assert status == 200 and payload == b"" and int(headers["content-length"]) > 100
    # On the wire: the head of HEAD ends the answer, nothing follows it.
    wire = raw_exchange(store.socket(role),
                        f"HEAD /v1/orders/{order['uuid']} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
    assert wire.startswith(b"HTTP/1.1 200 OK\r\n") and wire.endswith(b"\r\n\r\n"), wire


@pytest.mark.parametrize("role", ROLES)
def test_etag_and_if_match(store, role):
    order = create(store, role)
    path = f"/v1/orders/{order['uuid']}"
    assert order["_headers"]["etag"] == f'"v{order["version"]}"'
    status, _, headers, _ = call(store, role, "GET", path)
    assert (status, headers["etag"]) == (200, '"v1"')
    status, _, headers, payload = call(store, role, "PATCH", path, {"note": "first"}, JSON | {"If-Match": '"v1"'})
    assert (status, headers["etag"], json.loads(payload)["version"]) == (200, '"v2"', 2)
    # A stale tag: 412 with the order as it is, and nothing changed.
    status, _, headers, payload = call(store, role, "PATCH", path, {"note": "stale"}, JSON | {"If-Match": '"v1"'})
    error = json.loads(payload)["error"]
    assert (status, error["code"], error["current"]["version"], error["current"]["note"]) == (412, "precondition_failed", 2, "first")
    assert headers["etag"] == '"v2"'
    status, _, _, payload = call(store, role, "DELETE", path, headers={"If-Match": '"v1"'})
    assert (status, error_code(payload)) == (412, "precondition_failed")
    assert json.loads(call(store, role, "GET", path)[3])["note"] == "first"
    # A weak tag never matches (strong comparison); a malformed one is a clear 400.
    assert call(store, role, "PATCH", path, {"note": "w"}, JSON | {"If-Match": 'W/"v2"'})[0] == 412
    status, _, _, payload = call(store, role, "PATCH", path, {"note": "w"}, JSON | {"If-Match": "v2"})
    assert (status, error_code(payload)) == (400, "invalid_header")
    # A body version and a tag that differ cannot both be current: 412 whichever is current,
    # never a 400 (the document allows both fields).
    for body_version, tag in ((2, '"v5"'), (5, '"v2"')):
        status, _, _, payload = call(store, role, "PATCH", path, {"note": "two", "version": body_version}, JSON | {"If-Match": tag})
        assert (status, error_code(payload)) == (412, "precondition_failed"), payload
    # `*` matches any current order; the matching tag lets the change through.
    assert call(store, role, "PATCH", path, {"note": "any"}, JSON | {"If-Match": "*"})[0] == 200
    status, _, _, payload = call(store, role, "DELETE", path, headers={"If-Match": '"v3"'})
    assert status == 200 and json.loads(payload)["uuid"] == order["uuid"]
    assert call(store, role, "GET", path)[0] == 404
    # A missing order is a 404 whatever If-Match says (RFC 9110 13.2.1).
    assert call(store, role, "DELETE", f"/v1/orders/{new_uuid()}", headers={"If-Match": "*"})[0] == 404


@pytest.mark.parametrize("role", ROLES)
def test_content_type_is_checked(store, role):
    for content_type in ["text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", None]:
        u = new_uuid()
        headers = {"Content-Type": content_type} if content_type else {}
        status, reason, _, payload = call(store, role, "POST", "/v1/orders",
                                          json.dumps({"uuid": u, "customerName": "x"}).encode(), headers)
        assert (status, error_code(payload)) == (415, "unsupported_media_type"), content_type
        assert call(store, role, "GET", f"/v1/orders/{u}")[0] == 404, "a refused request changes nothing"
    settle(store, role)
    u = new_uuid()
    status, _, _, _ = call(store, role, "POST", "/v1/orders", json.dumps({"uuid": u}).encode(),
                           {"Content-Type": "application/json; charset=utf-8"})
    assert status == 201


@pytest.mark.parametrize("role", ROLES)
def test_an_empty_body_is_said_so(store, role):
    order = create(store, role)
    for method, path in [("POST", "/v1/orders"), ("PATCH", f"/v1/orders/{order['uuid']}"), ("POST", "/v1/operations")]:
        status, _, _, payload = call(store, role, method, path, b"", JSON | {"Content-Length": "0"})
        assert (status, error_code(payload)) == (400, "empty_body"), (method, path, payload)


@pytest.mark.parametrize("role", ROLES)
def test_a_repeated_op_id_gets_the_same_answer_byte_for_byte(store, role):
    existing = create(store, role)
    settle(store, role)
    u = new_uuid()
    message = {"operation": 0, "opId": f"repeat-{uuidlib.uuid4()}", "orders": [
        {"uuid": u, "customerName": "a", "tableSize": 4},
        {"uuid": "not-a-uuid"},
        {"customerName": "no uuid"},
        {"uuid": u, "customerName": "b"},
        {"uuid": existing["uuid"], "customerName": "changed"},
        {"uuid": new_uuid(), "tableSize": "six"},
    ]}
    body = json.dumps(message).encode()
    request = (f"POST /v1/operations HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
    first = raw_exchange(store.socket(role), request)
    assert first.startswith(b"HTTP/1.1 200 OK\r\n"), first
    answer = json.loads(first.split(b"\r\n\r\n", 1)[1])
    assert [o["uuid"] for o in answer["applied"]] == [u]
    assert [(e["code"], e.get("index")) for e in answer["errors"]] == [
        ("invalid_uuid", 1), ("invalid_uuid", 2), ("already_exists", 3), ("already_exists", 4), ("invalid_field", 5)]
    # The order changes in between: the repeat still gets the first answer, and applies nothing.
    settle(store, role)
    assert call(store, role, "PATCH", f"/v1/orders/{u}", {"note": "later"})[0] == 200
    for _ in range(2):
        assert raw_exchange(store.socket(role), request) == first
    assert json.loads(call(store, role, "GET", f"/v1/orders/{u}")[3])["note"] == "later"
