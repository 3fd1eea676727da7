"""Runs real `ordersync` processes on the hosts of a simulated LAN (see lanharness.py).

Used by the scenario tests and by the demo (Scripts/demo.py)::

    with Lan(3) as lan:
        master = OrderSyncNode.master(lan.hosts[0], store="shop1", name="front")
        slave = OrderSyncNode.slave(lan.hosts[1])     # paired with `master` on its first start
        slave.wait_live()
        order = slave.create(customer="Kevin", table="T4")

A slave pairs on its first start (Docs/SECURITY.md): `OrderSyncNode.slave` runs `ordersync pair`
on its master's host (`pair_with`, by default the last master of its store started on the LAN
and still running) and starts the slave once with `--pair CODE`; later starts need no code.
A master holds several open codes at once (one per till), so slaves pair side by side; a code
reaches the slave on its command line by default, or (`pair_via=`) on standard input, in a file
or in `ORDERSYNC_PAIR_CODE`, where `ps` does not show it. Masters admit plain StorePOS clients only with `insecure_storepos=True`.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import sqlite3
import subprocess
import time
import uuid as uuidlib

from lanharness import HERE, PYTHON, Host, LanError, wait_until
from sync_checks import CheckFailed, check_converged

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ordersync_binary() -> str:
    """The `ordersync` executable: $ORDERSYNC_BIN, else the debug build in .build."""
    path = os.environ.get("ORDERSYNC_BIN") or os.path.join(REPO, ".build", "debug", "ordersync")
    if not os.access(path, os.X_OK):
        raise LanError(f"ordersync binary not found at {path}; run `swift build` (or set ORDERSYNC_BIN)")
    return path


class CommandError(RuntimeError):
    """An `ordersync` command exited non-zero."""

    def __init__(self, argv, result: subprocess.CompletedProcess):
        super().__init__(f"{' '.join(argv)} exited {result.returncode}: {result.stderr.strip()}")
        self.result = result
        self.stderr = result.stderr


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 to a node's local API on its Unix socket."""

    def __init__(self, path: str):
        super().__init__("localhost", timeout=30)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(self.unix_path)


class OrderSyncNode:
    """One `ordersync master` or `ordersync slave` process on a host, with its data dir and log."""

    def __init__(self, host: Host, role: str, args: list[str], data_dir: str | None = None,
                 log_format: str = "json", umask: int | None = None, pair_code: str | None = None,
                 store: str | None = None, pair_via: str = "argv"):
        self.host = host
        self.role = role
        self.store = store
        #: Slave: the code passed on its next start (its first one only), and how: "argv"
        #: (`--pair CODE`), "stdin" (`--pair -`), "file" (`--pair-file`) or "env"
        #: (`ORDERSYNC_PAIR_CODE`).
        self.pair_code = pair_code
        self.pair_via = pair_via
        self.data_dir = data_dir or os.path.join(host.dir, f"{role}-data")
        # With `umask`, the process runs with that umask and makes its data dir itself.
        self.umask = umask
        if umask is None:
            os.makedirs(self.data_dir, mode=0o700, exist_ok=True)
        self.log_path = os.path.join(host.dir, f"{role}-{int(time.time() * 1000)}.log")
        self.args = args
        self.log_format = log_format
        self.process: subprocess.Popen | None = None
        if role == "master":
            _masters(host).append(self)
        self.start()

    @classmethod
    def master(cls, host: Host, store: str | None = "shop1", name: str | None = None,
               port: int = 0, extra: list[str] | None = None, data_dir: str | None = None,
               umask: int | None = None, insecure_storepos: bool = False,
               storepos_allow: list[str] | None = None) -> "OrderSyncNode":
        """A master; `insecure_storepos` admits plain StorePOS clients (from `storepos_allow`
        ranges when given)."""
        args = ["--port", str(port)]
        if store:
            args += ["--store", store]
        if name:
            args += ["--name", name]
        if insecure_storepos:
            args.append("--insecure-storepos")
        for cidr in storepos_allow or []:
            args += ["--storepos-allow", cidr]
        return cls(host, "master", args + (extra or []), data_dir=data_dir, umask=umask, store=store)

    @classmethod
    def slave(cls, host: Host, store: str | None = None, master_url: str | None = None,
              extra: list[str] | None = None, data_dir: str | None = None,
              pair_with: "OrderSyncNode | None" = None, pair: bool = True,
              pair_name: str | None = None, pair_via: str = "argv") -> "OrderSyncNode":
        """A slave, paired on its first start with `pair_with` (default: the last running master
        of `store`, or of any store, started on this LAN), the code given as `pair_via` says.
        `pair=False` starts it without a code (or a data dir that is already paired)."""
        args = []
        if store:
            args += ["--store", store]
        if master_url:
            args += ["--master", master_url]
        directory = data_dir or os.path.join(host.dir, "slave-data")
        code = None
        if pair and not os.path.exists(os.path.join(directory, "master.trust")):
            master = pair_with or last_master(host, store)
            code = master.pairing_code(name=pair_name)
        return cls(host, "slave", args + (extra or []), data_dir=data_dir, pair_code=code, store=store,
                   pair_via=pair_via)

    # Process ---------------------------------------------------------------------------------

    def start(self) -> None:
        argv = [ordersync_binary(), self.role, "--data-dir", self.data_dir, "--log-format", self.log_format,
                "--log-level", "debug", *self.args]
        env, stdin, code = self.environment(), None, self.pair_code
        self.pair_code = None
        if code is not None and self.pair_via == "argv":
            argv += ["--pair", code]
        elif code is not None and self.pair_via == "stdin":
            argv += ["--pair", "-"]
            stdin = subprocess.PIPE
        elif code is not None and self.pair_via == "file":
            path = os.path.join(self.host.dir, f"pair-code-{int(time.time() * 1000)}")
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                f.write(code + "\n")
            argv += ["--pair-file", path]
        elif code is not None:
            env = dict(env if env is not None else os.environ, ORDERSYNC_PAIR_CODE=code)
        self.log_file = open(self.log_path, "ab")
        self.process = self.host.popen(argv, env=env, stdout=self.log_file, stderr=self.log_file, stdin=stdin,
                                       text=stdin is not None, umask=-1 if self.umask is None else self.umask)
        if stdin is not None:
            self.process.stdin.write(code + "\n")
            self.process.stdin.close()

    def environment(self) -> dict | None:
        """The daemon's environment (None: the test's own)."""
        return None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        """Sends `sig` and waits for the exit; returns the exit code."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout=timeout)
        finally:
            self.log_file.close()
        self.process = None
        return code

    def kill(self) -> None:
        """kill -9."""
        self.stop(signal.SIGKILL)

    def restart(self, args: list[str] | None = None) -> None:
        self.stop()
        if args is not None:
            self.args = args
        self.start()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    # Logs ------------------------------------------------------------------------------------

    def log_lines(self) -> list[str]:
        with open(self.log_path, "r", errors="replace") as f:
            return f.read().splitlines()

    def events(self, name: str | None = None) -> list[dict]:
        """Parsed JSON log lines, optionally only those with event == name."""
        out = []
        for line in self.log_lines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if name is None or event.get("event") == name:
                out.append(event)
        return out

    def wait_event(self, name: str, timeout: float = 20, where=None, count: int = 1) -> dict:
        """Waits until the log has `count` events called `name` (matching `where`); returns the last."""
        def found():
            if not self.alive():
                raise LanError(f"{self.role} on {self.host.name} exited: " + "\n".join(self.log_lines()[-20:]))
            matches = [e for e in self.events(name) if where is None or where(e)]
            return matches[count - 1] if len(matches) >= count else None
        return wait_until(found, timeout, interval=0.05, what=f"event {name} from {self.role} on {self.host.name}")

    # CLI ------------------------------------------------------------------------------------

    def cli(self, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        argv = [ordersync_binary(), *args[:2], "--data-dir", self.data_dir, *args[2:]] if args[0] in ("order", "terminal", "key", "pair") else \
               [ordersync_binary(), args[0], "--data-dir", self.data_dir, *args[1:]]
        result = self.host.run(argv, timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise CommandError(argv, result)
        return result

    def status(self) -> dict:
        return json.loads(self.cli("status", "--json").stdout)

    # Pairing ---------------------------------------------------------------------------------

    def pairing_code(self, name: str | None = None, valid_for: int | None = None) -> str:
        """Master: opens a pairing code (`ordersync pair --json` on its host) and returns it;
        the codes opened before stay open."""
        return self.pair(name=name, valid_for=valid_for)["code"]

    def pair(self, name: str | None = None, valid_for: int | None = None) -> dict:
        """Master: `ordersync pair --json` (opens one more code; the others stay open)."""
        args = ["pair", "--json"] + (["--name", name] if name else []) + \
            (["--valid-for", str(valid_for)] if valid_for else [])
        self.wait_api()
        return json.loads(self.cli(*args).stdout)

    def wait_api(self, timeout: float = 20) -> None:
        """Waits until the daemon's local API answers (a just started node)."""
        def answers():
            if not self.alive():
                raise LanError(f"{self.role} on {self.host.name} exited: " + "\n".join(self.log_lines()[-20:]))
            try:
                return self.status()
            except CommandError:
                return None
        wait_until(answers, timeout, interval=0.05, what=f"the local API of the {self.role} on {self.host.name}")

    def pair_again(self, master: "OrderSyncNode") -> None:
        """Slave: stops, and starts again with a new code from `master` (`--pair`)."""
        self.stop()
        self.pair_code = master.pairing_code()
        self.start()

    def terminals(self) -> list[dict]:
        """Master: its paired terminals (`ordersync terminal list --json`)."""
        answer = json.loads(self.cli("terminal", "list", "--json").stdout)
        return answer["terminals"] if isinstance(answer, dict) else answer

    def node_id(self) -> str:
        """This node's id (from its status, once its local API answers)."""
        self.wait_api()
        return self.status()["nodeId"]

    def origin_prefix(self) -> str:
        """How a master's journal names this slave: its name and the start of its node id,
        which the link authenticated (`h2 [KAKN-RP4X]@`, then its address)."""
        return f"{self.host.name} [{self.node_id()[:9]}]@"

    def wait_live(self, timeout: float = 30) -> dict:
        """Slave: waits until its link to the master is live; returns the status."""
        def live():
            if not self.alive():
                raise LanError(f"{self.role} on {self.host.name} exited: " + "\n".join(self.log_lines()[-20:]))
            try:
                s = self.status()
            except CommandError:
                return None
            return s if s.get("master", {}).get("state") == "live" else None
        return wait_until(live, timeout, interval=0.1, what=f"slave on {self.host.name} to be live")

    def wait_drained(self, timeout: float = 30) -> dict:
        """Slave: waits until the master has answered every queued operation (an empty outbox and
        every order `synced`); returns the status. Orders can agree on every node a moment before
        the master's answers to the last operations reach the slave that sent them."""
        def drained():
            status = self.status()
            return status if status["outbox"] == 0 and all(o["sync"] == "synced" for o in self.orders()) else None
        return wait_until(drained, timeout, interval=0.1, what=f"slave on {self.host.name} to empty its outbox")

    def create(self, customer: str, uuid: str | None = None, **fields) -> dict:
        args = ["order", "create", "--customer", customer, "--json", "--uuid", uuid or str(uuidlib.uuid4()).upper()]
        for key, flag in (("shipping", "--shipping"), ("table", "--table"), ("table_size", "--table-size"),
                          ("created", "--created"), ("note", "--note")):
            if key in fields:
                args += [flag, str(fields[key])]
        return json.loads(self.cli(*args).stdout)

    def update(self, uuid: str, **fields) -> dict:
        args = ["order", "update", uuid, "--json"]
        for key, flag in (("customer", "--customer"), ("shipping", "--shipping"), ("table", "--table"),
                          ("table_size", "--table-size")):
            if key in fields:
                args += [flag, str(fields[key])]
        return json.loads(self.cli(*args).stdout)

    def remove(self, uuid: str) -> dict:
        return json.loads(self.cli("order", "remove", uuid, "--json").stdout)

    def operation(self, operation: int, order: dict | list[dict], op_id: str) -> tuple[int, dict]:
        """Sends one operation message (one order, or a list) with its operation id to the local
        API (`POST /v1/operations` on the node's Unix socket); returns the HTTP status and the
        answer."""
        orders = order if isinstance(order, list) else [order]
        conn = UnixHTTPConnection(os.path.join(self.data_dir, "ordersync.sock"))
        try:
            conn.request("POST", "/v1/operations", headers={"Content-Type": "application/json"},
                         body=json.dumps({"operation": operation, "orders": orders, "opId": op_id}))
            response = conn.getresponse()
            return response.status, json.loads(response.read())
        finally:
            conn.close()

    def orders(self) -> list[dict]:
        """Every order (all pages) as this node's local API (or its file, when stopped) has them."""
        out, page = [], 1
        while True:
            data = json.loads(self.cli("order", "list", "--json", "--per", "1000", "--page", str(page)).stdout)
            out += data["orders"]
            if len(out) >= data["total"] or not data["orders"]:
                return out
            page += 1


def _masters(host: Host) -> list[OrderSyncNode]:
    """The masters started on the LAN of `host`, oldest first."""
    if not hasattr(host.lan, "ordersync_masters"):
        host.lan.ordersync_masters = []
    return host.lan.ordersync_masters


def last_master(host: Host, store: str | None = None) -> OrderSyncNode:
    """The last master started on the LAN of `host` that still runs (of `store` when given)."""
    for master in reversed(_masters(host)):
        if master.alive() and (store is None or master.store == store):
            return master
    raise LanError(f"no running master{' of store ' + store if store else ''} on this LAN to pair a slave "
                   "with: start one first or pass pair_with=")


def canonical(orders: list[dict]) -> list[tuple]:
    """Orders reduced to comparable tuples, sorted by uuid."""
    return sorted((o["uuid"].lower(), o.get("customerName"), o.get("created"), o.get("shippingMethod"),
                   o.get("tableName"), o.get("tableSize"), o.get("version")) for o in orders)


def read_sqlite(data_dir: str, query: str) -> list[dict]:
    """Rows of `query` on a node's SQLite file (opened read-only; the node may be running), each
    a dict of its columns."""
    path = os.path.join(data_dir, "ordersync.sqlite")
    if not os.path.exists(path):
        raise LanError(f"no SQLite file at {path}")
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        connection.row_factory = sqlite3.Row
        return [dict(row) for row in connection.execute(query)]
    finally:
        connection.close()


def stored_orders(data_dir: str) -> list[dict]:
    """Every column of every row of a node's orders table: the orders as the node stores them."""
    return read_sqlite(data_dir, "SELECT * FROM orders ORDER BY uuid_key")


def journal_entries(data_dir: str) -> list[dict]:
    """A master's journal from its SQLite file: `seq`, `opId`, `operation`, `orders` (uuids)."""
    rows = read_sqlite(data_dir, "SELECT seq, op_id, operation, order_uuids FROM journal ORDER BY seq")
    return [{"seq": r["seq"], "opId": r["op_id"], "operation": r["operation"], "orders": json.loads(r["order_uuids"])}
            for r in rows]


def wait_converged(nodes: list[OrderSyncNode], timeout: float = 30, expect: int | None = None) -> list[dict]:
    """Waits until every node holds the same orders (and `expect` of them); returns them as the
    first node lists them. Orders are compared whole: every member its local API shows (unknown
    members included, the slave's own `sync` state left out) and every column of its SQLite
    orders table (see `sync_checks.check_converged`)."""
    state = {}
    names = [f"{node.role} on {node.host.name} (#{i})" for i, node in enumerate(nodes)]

    def same():
        views = {name: node.orders() for name, node in zip(names, nodes)}
        state["counts"] = [len(v) for v in views.values()]
        try:
            check_converged(views)
            check_converged(views, {name: stored_orders(node.data_dir) for name, node in zip(names, nodes)})
        except CheckFailed as difference:
            state["difference"] = str(difference)
            return None
        state.pop("difference", None)
        orders = views[names[0]]
        if expect is not None and len(orders) != expect:
            return None
        # In a tuple: an empty list of orders (expect=0) is a result, not "not yet".
        return (orders,)
    try:
        return wait_until(same, timeout, interval=0.2, what="all nodes to hold the same orders")[0]
    except LanError:
        raise LanError(f"nodes did not converge within {timeout}s; order counts {state.get('counts')}, expected "
                       f"{expect}; {state.get('difference', 'no difference at the last look')}") from None


def run_workload(node: OrderSyncNode, prefix: str, seconds: float | None = None, count: int | None = None) -> subprocess.Popen:
    """Starts `order_workload.py` on the node's host against its local API; `workload_results`
    collects what it printed."""
    argv = [PYTHON, os.path.join(HERE, "order_workload.py"), os.path.join(node.data_dir, "ordersync.sock"), prefix,
            *(["--seconds", str(seconds)] if seconds is not None else ["--count", str(count)])]
    return node.host.popen(argv, stdout=subprocess.PIPE, text=True)


def workload_results(process: subprocess.Popen, timeout: float = 300) -> list[dict]:
    """The operations a `run_workload` process sent (one dict per operation), once it has ended."""
    out, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"order_workload.py exited {process.returncode}"
    return [json.loads(line) for line in out.splitlines() if line.strip()]
