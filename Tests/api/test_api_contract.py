"""Docs/openapi.yaml against a live master and a live slave: schemathesis generates requests for
every operation of the document (valid ones, then invalid ones), sends them to the node's Unix
socket, and checks every answer against the document (status codes, content types, headers,
body schemas) and that none is a server error. Every operation of the document must run on the
master and on the slave and be answered by a route of the node (not only `404 no_route`); a
request generated as valid must never be answered `400` or `404 no_route`. The answers per
operation are printed.

Bounded and reproducible: a fixed number of examples per operation, derandomized (the same
requests every run), no example database.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid as uuidlib

import pytest
from lan_support import require
from lanharness import wait_until

try:
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (content_type_conformance, response_headers_conformance,
                                                   response_schema_conformance, status_code_conformance)
except ImportError as error:  # reported by the test itself, as a skip or (under CI) a failure
    schemathesis = None
    IMPORT_ERROR = str(error)

from unix_http import UnixHTTPConnection, unix_session

DOCUMENT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "Docs", "openapi.yaml")
#: Examples per operation: valid requests, and requests that break the document on purpose.
POSITIVE_EXAMPLES = int(os.environ.get("API_CONTRACT_EXAMPLES", "60"))
NEGATIVE_EXAMPLES = max(1, POSITIVE_EXAMPLES // 3)


def _checks():
    return [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
            response_headers_conformance]


def _seed_orders(socket_path: str, count: int, expect: int = 201) -> list[str]:
    """Orders the generated PATCH/DELETE/GET requests can find (random UUIDs would only ever
    meet `404`)."""
    uuids = []
    conn = UnixHTTPConnection(socket_path)
    try:
        for i in range(count):
            u = str(uuidlib.uuid4()).upper()
            conn.request("POST", "/v1/orders", body=json.dumps({"uuid": u, "customerName": f"seed {i}", "tableSize": 2}),
                         headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            assert response.status == expect, response.status
            uuids.append(u)
    finally:
        conn.close()
    return uuids


def _error_code(response) -> str | None:
    """The `error.code` of an error answer, or None."""
    if response.status_code < 400:
        return None
    try:
        return response.json().get("error", {}).get("code")
    except (ValueError, AttributeError):
        return None


def _run_operation(operation, session, mode, examples: int, answers: dict, **fixed) -> str | None:
    """Runs schemathesis on one operation; returns the failure report, or None. Every answer is
    counted in `answers` under its status (and error code): `"200"`, `"404 no_route"`...

    A request generated as valid (positive mode) must never be answered `400` (the document
    allowed it, the node refused it) nor `404 no_route` (a documented path the node does not
    route)."""
    sent = []

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate], report_multiple_bugs=False)
    @given(case=operation.as_strategy(generation_mode=mode, **fixed))
    def check(case):
        response = case.call(session=session, base_url="http://localhost", timeout=30)
        sent.append(response.status_code)
        code = _error_code(response)
        key = f"{response.status_code} {code}" if code else str(response.status_code)
        answers[key] = answers.get(key, 0) + 1
        if mode == GenerationMode.POSITIVE:
            assert response.status_code != 400, (
                f"a valid request was refused 400: {case.as_curl_command()}\n{response.text[:500]}")
            assert code != "no_route", f"a documented route is not served: {case.as_curl_command()}"
        case.validate_response(response, checks=_checks())

    try:
        check()
    except Unsatisfiable:
        # Nothing of this operation can be made invalid (no parameters, no body).
        if mode == GenerationMode.NEGATIVE:
            return None
        raise
    except BaseException as failure:  # noqa: BLE001 - schemathesis raises an exception group
        if isinstance(failure, KeyboardInterrupt):
            raise
        return f"{operation.method.upper()} {operation.path} ({mode.value}, {fixed or 'generated'}): {failure}"
    assert sent, f"{operation.method.upper()} {operation.path}: no request was sent"
    return None


# Routes no generated request may reach: a valid `POST /v1/promote` on the slave really promotes
# it (the store's master role moves, and the master under test steps down) or waits the
# election's 10 s deadline for `no_majority`. Its answers and refusals are checked by
# OrderSyncNodeTests.PromotionNodeTests and NodePolicyTests.PromoteRouteTests instead.
NOT_GENERATED = ("/v1/promote",)
EXCLUDED = [arg for path in NOT_GENERATED for arg in ("--exclude-path", path)]


def _contract(store, role: str, alone: bool = False) -> None:
    require(schemathesis is not None, f"schemathesis is not installed: {globals().get('IMPORT_ERROR')}")
    socket_path = store.socket(role)
    schema = schemathesis.openapi.from_path(DOCUMENT)
    session = unix_session(socket_path)
    if role == "slave" and not alone:
        store.slave.wait_live()
    seeded = _seed_orders(socket_path, 3, expect=202 if alone else 201)
    failures = []
    answers: dict[str, dict[str, int]] = {}
    started = time.monotonic()
    for result in schema.get_all_operations():
        operation = result.ok()
        name = f"{operation.method.upper()} {operation.path}"
        if operation.path in NOT_GENERATED:
            continue
        answers[name] = {}
        # The change feed as one JSON answer at once: a long-poll or an event stream would hold
        # the run (the feed's own tests follow those).
        bounded = {"query": {"timeout": 0}, "headers": {"Accept": "application/json"}} if operation.path == "/v1/changes" else {}
        runs = [(GenerationMode.POSITIVE, POSITIVE_EXAMPLES, bounded), (GenerationMode.NEGATIVE, NEGATIVE_EXAMPLES, bounded)]
        if "{uuid}" in operation.path:
            # The same operations on orders that exist: ETag, If-Match, 412, conflicts.
            runs += [(GenerationMode.POSITIVE, POSITIVE_EXAMPLES // 2, {"path_parameters": {"uuid": u}}) for u in seeded]
        for mode, examples, fixed in runs:
            failure = _run_operation(operation, session, mode, examples, answers[name], **fixed)
            if failure:
                failures.append(failure)
    session.close()
    requests = sum(sum(counts.values()) for counts in answers.values())
    print(f"FIGURE {role}{' alone' if alone else ''}: {len(answers)} operations, {requests} requests "
          f"in {time.monotonic() - started:.1f} s")
    for name, counts in answers.items():
        print(f"  {name}: " + ", ".join(f"{key} x{n}" for key, n in sorted(counts.items())))
    documented = {f"{method.upper()} {path}" for path, item in schema.raw_schema["paths"].items() if path not in NOT_GENERATED
                  for method in item if method in ("get", "put", "post", "patch", "delete", "head", "options")}
    assert set(answers) == documented, f"operations not run: {sorted(documented - set(answers))}"
    unserved = [name for name, counts in answers.items()
                if sum(n for key, n in counts.items() if key != "404 no_route") == 0]
    assert not unserved, f"operations never answered but with 404 no_route: {unserved}"
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("role", ["slave", "master"])
def test_every_answer_matches_the_openapi_document(store, role):
    _contract(store, role)


class _TcpToUnix:
    """127.0.0.1:PORT relayed byte for byte to a Unix socket, for the schemathesis command line
    (which speaks TCP only)."""

    def __init__(self, path: str):
        self.path = path
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            node = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            node.connect(self.path)
            for a, b in ((client, node), (node, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65_536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            try:
                sink.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self) -> None:
        self.server.close()


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("role", ["slave", "master"])
def test_a_plain_schemathesis_run_finds_nothing(store, role):
    """`st run Docs/openapi.yaml` as anyone would start it from the project's folder: every phase
    (examples, coverage, fuzzing, stateful) and schemathesis's default checks, which are all of
    them: `positive_data_acceptance` (a request the document allows is not refused) and
    `negative_data_rejection` (one it forbids is not accepted) among them. `schemathesis.toml`
    names the documented answers that depend on state (410 for a stale cursor or a removed order,
    412 for If-Match).

    The coverage phase (boundary values of every parameter and body, missing and extra headers,
    and methods a path does not answer: `405` with `Allow`) is this run's: its cases are
    schemathesis's explicit examples, the same whatever `--max-examples` says, and its checks
    include `unsupported_method` and `allow_header_conformance`. (A second run of the coverage
    phase alone, with seven of these checks, repeated the same requests.)"""
    require(schemathesis is not None, f"schemathesis is not installed: {globals().get('IMPORT_ERROR')}")
    socket_path = store.socket(role)
    if role == "slave":
        store.slave.wait_live()
    relay = _TcpToUnix(socket_path)
    started = time.monotonic()
    try:
        result = subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), "st"), "run", DOCUMENT, "--url", f"http://127.0.0.1:{relay.port}",
             "--seed", "1", *EXCLUDED, "--no-color", "--request-timeout", "70", "--max-examples", "50"],
            capture_output=True, text=True, timeout=900, cwd=REPO)
    finally:
        relay.close()
    summary = result.stdout[-6000:]
    print(f"FIGURE {role}: plain schemathesis run in {time.monotonic() - started:.0f} s: "
          + next((line.strip() for line in reversed(result.stdout.splitlines()) if "generated" in line), "?"))
    assert result.returncode == 0, summary
    assert " generated, " in summary, summary
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in result.stdout, summary


def test_a_slave_without_its_master_answers_as_documented(store):
    """Writes answered `202` (pending, in the outbox), as the document says. Runs last: the
    master is stopped."""
    store.master.stop()
    wait_until(lambda: store.slave.status()["master"]["state"] != "live", 30, what="the slave to lose its master")
    _contract(store, "slave", alone=True)
    assert store.slave.status()["outbox"] > 0, "no write went to the outbox: the 202 answers were not exercised"


def test_the_document_is_valid_openapi_3_1_and_lists_every_documented_error_code():
    require(schemathesis is not None, f"schemathesis is not installed: {globals().get('IMPORT_ERROR')}")
    schema = schemathesis.openapi.from_path(DOCUMENT)
    schema.validate()  # against the OpenAPI 3.1 meta-schema
    raw = schema.raw_schema
    assert raw["openapi"].startswith("3.1")
    operation_ids = [op["operationId"] for item in raw["paths"].values() for method, op in item.items()
                     if isinstance(op, dict) and "operationId" in op]
    assert len(operation_ids) == len(set(operation_ids)) >= 22
    codes = set(raw["components"]["schemas"]["ErrorCode"]["enum"])
    # Docs/API.md's table of errors and the document's list agree.
    with open(os.path.join(os.path.dirname(DOCUMENT), "API.md"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("## Errors", 1)[1].split("## ", 1)[0]
    documented = set()
    for line in table.splitlines():
        if line.startswith("| 4") or line.startswith("| 5"):
            codes_cell = re.sub(r"\([^)]*\)", "", line.split("|")[2])  # without the explanations
            documented |= set(codes_cell.split("`")[1::2])
    assert documented and documented <= codes, documented - codes
    assert codes - documented <= {"resnapshot_required"}, codes - documented
