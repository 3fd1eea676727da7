"""Head office's PostgreSQL on a simulated host of its own, for the roll-up tests (issue 28).

``HeadOffice(host)`` makes a cluster with ``initdb`` in the host's folder (owned by the user
``postgres``: PostgreSQL refuses to run as root), starts it listening on the host's address only,
and sets it up with the SQL the setup guide shows (``Packaging/postgresql``: the schema owner,
the shops' group role, row-level security by ``store_id``; Docs/OPERATIONS.md, "Head office
roll-up (PostgreSQL)"). Each shop gets a login role of its own (``add_shop``) and a URL to give
``ordersync rollup --database-url``::

    office = HeadOffice(lan.hosts[3]).start()
    url = office.add_shop("shop_a", "shopA")              # the role's URL from any host of the LAN
    office.stop(immediate=True); office.start()             # `pg_ctl stop -m immediate`, same data
    office.wan_down(shop_host); office.wan_up(shop_host)    # that shop's packets silently dropped
    office.journal("shopA")                                 # rows, read as the superuser

A dead WAN is silent (iptables DROP on head office's host: no reset, no ICMP), as a cut line or a
dead router is: a client only learns it from its own deadlines. Shaping (``shape``): this
kernel has no ``netem`` qdisc (``tc qdisc … netem`` answers "unknown qdisc"), so latency comes
from a delaying relay on head office's host (``wan_relay.py``, the shop's URL points at it),
loss from iptables' ``statistic`` match and bandwidth from a ``tbf`` qdisc.

Reads go through ``psql`` on head office's host over its Unix socket, as the superuser, so that a
WAN fault never hides a row from a check. ``rows_as`` runs a query as a shop's role over TCP from
a shop's host (what row-level security lets that role see).
"""

from __future__ import annotations

import csv
import io
import os
import pwd
import re
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass

from lanharness import HERE, PYTHON, Host, LanError, wait_until

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: The SQL the setup guide shows and the package installs (/usr/share/ordersync/postgresql).
SETUP_SQL = os.path.join(REPO, "Packaging", "postgresql", "ordersync-head-office.sql")
ADD_SHOP_SQL = os.path.join(REPO, "Packaging", "postgresql", "ordersync-add-shop.sql")
#: The database every shop ships into.
DATABASE = "chain"
#: Where Debian keeps PostgreSQL's server programs when they are not on PATH.
_BINDIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin")


def postgres_tool(name: str) -> str | None:
    """The path of a PostgreSQL server program (``initdb``, ``pg_ctl``), or None."""
    found = shutil.which(name)
    if found:
        return found
    for folder in _BINDIRS:
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK):
            return path
    return None


def missing_postgres() -> list[str]:
    """Why head office's PostgreSQL cannot be started here; empty when it can."""
    missing = [f"`{tool}` not found (apt-get install postgresql postgresql-client; Scripts/setup.sh)"
               for tool in ("initdb", "pg_ctl", "psql") if postgres_tool(tool) is None]
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        missing.append("no user `postgres` to run the server as (the postgresql package makes it)")
    for tool in ("iptables", "tc"):
        if shutil.which(tool) is None:
            missing.append(f"`{tool}` not found (apt-get install iptables iproute2)")
    return missing


def require_postgres() -> None:
    """Skips the test (fails it under CI mode) when head office's PostgreSQL cannot run here."""
    from lan_support import require
    missing = missing_postgres()
    require(not missing, "; ".join(missing))


@dataclass
class Shop:
    """A shop's login role at head office."""
    role: str
    store: str
    password: str


class HeadOffice:
    """One PostgreSQL cluster on ``host``, listening on the host's address at ``port``."""

    def __init__(self, host: Host, port: int = 5432, tls: tuple[str, str] | None = None):
        """``tls`` = (certificate, key) PEM files: the server speaks TLS with them and lets the
        LAN in over TLS only (``hostssl``), as the setup guide asks."""
        self.host = host
        self.port = port
        self.tls = tls
        self.dir = os.path.join(host.dir, "postgres")
        self.data = os.path.join(self.dir, "data")
        self.sockets = os.path.join(self.dir, "run")
        self.log = os.path.join(self.dir, "server.log")
        self.shops: dict[str, Shop] = {}
        self._relays: dict[str, subprocess.Popen] = {}
        self._dropped: list[list[str]] = []
        self._initialised = False

    # The server ---------------------------------------------------------------------------------

    def _as_postgres(self, argv: list[str], timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
        return self.host.run(["runuser", "-u", "postgres", "--", *argv], timeout=timeout, check=check)

    def initdb(self) -> None:
        """A new cluster in the host's folder (owned by ``postgres``), its connections from the
        LAN by password (scram-sha-256), from the host's Unix socket by trust."""
        account = pwd.getpwnam("postgres")
        for folder in (self.dir, self.sockets):
            os.makedirs(folder, mode=0o700, exist_ok=True)
            os.chown(folder, account.pw_uid, account.pw_gid)
        # A few seconds alone; over 60 s once in a whole test run, at nice 10 beside three
        # compilers (Docs/TESTING.md): what it waits for is the CPU, not anything of ours.
        self._as_postgres([postgres_tool("initdb"), "--no-sync", "-D", self.data, "-U", "postgres",
                           "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8"],
                          timeout=300)
        with open(os.path.join(self.data, "pg_hba.conf"), "a") as hba:
            hba.write(f"{'hostssl' if self.tls else 'host'} all all {self.host.lan.subnet} scram-sha-256\n")
        if self.tls:
            # "the file must be owned by the database user ... and must disallow any access to
            # world or group" (PostgreSQL, 19.9.3): copies the server reads as its own.
            for source, name in zip(self.tls, ("server.crt", "server.key")):
                target = os.path.join(self.data, name)
                shutil.copyfile(source, target)
                os.chown(target, account.pw_uid, account.pw_gid)
                os.chmod(target, 0o600)
        self._initialised = True

    def start(self, timeout: float = 30) -> "HeadOffice":
        """Starts the server (``initdb`` first when there is no cluster yet) and waits until it
        accepts connections; the first start also runs the setup guide's SQL."""
        fresh = not self._initialised
        if fresh:
            self.initdb()
        options = (f"-p {self.port} -k {self.sockets} -c listen_addresses={self.host.address} "
                   "-c fsync=on -c log_connections=off")
        if self.tls:
            options += " -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key"
        self._as_postgres([postgres_tool("pg_ctl"), "-D", self.data, "-l", self.log, "-w", "-t", str(int(timeout)),
                           "-o", options, "start"], timeout=timeout + 10)
        if fresh:
            self.psql(f"CREATE DATABASE {DATABASE}", database="postgres")
            self.psql_file(SETUP_SQL)
        return self

    def stop(self, immediate: bool = False, timeout: float = 30) -> None:
        """``pg_ctl stop`` (``-m immediate``: every backend killed at once, no checkpoint: a crash
        the next start recovers from its WAL)."""
        self._as_postgres([postgres_tool("pg_ctl"), "-D", self.data, "-w", "-t", str(int(timeout)),
                           "-m", "immediate" if immediate else "fast", "stop"], timeout=timeout + 10)

    def running(self) -> bool:
        return self._as_postgres([postgres_tool("pg_ctl"), "-D", self.data, "status"], check=False).returncode == 0

    # SQL as the superuser, on the host's Unix socket -------------------------------------------

    def psql(self, sql: str, database: str = DATABASE, variables: dict[str, str] | None = None) -> list[dict]:
        """Runs ``sql`` as the superuser; returns the rows of its last statement as dicts of
        text (None for NULL)."""
        argv = [postgres_tool("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "--csv", "-P", "null=\\N",
                "-h", self.sockets, "-p", str(self.port), "-U", "postgres", "-d", database, "-c", sql]
        for name, value in (variables or {}).items():
            argv[1:1] = ["-v", f"{name}={value}"]
        return _csv_rows(self.host.run(argv, timeout=60).stdout)

    def psql_file(self, path: str, variables: dict[str, str] | None = None) -> None:
        """Runs an SQL file as the superuser (``psql -f``, its ``\\set`` and ``:'var'`` intact)."""
        argv = [postgres_tool("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", self.sockets, "-p", str(self.port),
                "-U", "postgres", "-d", DATABASE, "-f", path]
        for name, value in (variables or {}).items():
            argv[1:1] = ["-v", f"{name}={value}"]
        self.host.run(argv, timeout=60)

    # Shops ------------------------------------------------------------------------------------

    def add_shop(self, role: str, store: str) -> str:
        """Adds a shop with the guide's ``ordersync-add-shop.sql`` (a login role with a new
        password, its store); returns the URL its roll-up connects with."""
        shop = Shop(role=role, store=store, password=secrets.token_hex(12))
        self.psql_file(ADD_SHOP_SQL, {"role": role, "store": store, "password": shop.password})
        self.shops[role] = shop
        return self.url(role)

    def url(self, role: str, address: str | None = None, port: int | None = None, **params: str) -> str:
        """A libpq URL for a shop's role (through a relay when ``address``/``port`` say so)."""
        shop = self.shops[role]
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return (f"postgresql://{shop.role}:{shop.password}@{address or self.host.address}:{port or self.port}/"
                f"{DATABASE}" + (f"?{query}" if query else ""))

    def rows_as(self, role: str, on: Host, sql: str, check: bool = True) -> subprocess.CompletedProcess:
        """Runs ``sql`` with psql on host ``on`` as the shop's role over TCP (row-level security
        applies); the completed process (``stdout`` CSV), for a test to look at its refusals."""
        argv = [postgres_tool("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "--csv", self.url(role), "-c", sql]
        return on.run(argv, timeout=60, check=check)

    # What head office holds ----------------------------------------------------------------------

    def journal(self, store: str, lineage: str | None = None) -> list[dict]:
        """The store's journal rows, by lineage and seq (hashes as hex)."""
        where = f"store_id = '{_quote(store)}'" + (f" AND lineage = '{_quote(lineage)}'" if lineage else "")
        return self.psql("SELECT store_id, lineage, seq, term, op_id, origin, operation, message, "
                         "encode(hash, 'hex') AS hash, encode(rolling, 'hex') AS rolling "
                         f"FROM ordersync.journal WHERE {where} ORDER BY lineage, seq")

    def orders(self, store: str) -> list[dict]:
        return self.psql(f"SELECT * FROM ordersync.orders WHERE store_id = '{_quote(store)}' ORDER BY uuid")

    def checkpoints(self, store: str | None = None) -> list[dict]:
        where = f" WHERE store_id = '{_quote(store)}'" if store else ""
        return self.psql("SELECT store_id, lineage, seq, encode(rolling, 'hex') AS rolling "
                         f"FROM ordersync.checkpoints{where} ORDER BY store_id, lineage")

    def checkpoint_seq(self, store: str) -> int:
        """The highest checkpoint of the store (0 when it has none)."""
        return max((int(row["seq"]) for row in self.checkpoints(store)), default=0)

    def alarms(self, store: str) -> list[dict]:
        return self.psql(f"SELECT * FROM ordersync.alarms WHERE store_id = '{_quote(store)}' ORDER BY id")

    def wait_checkpoint(self, store: str, seq: int, timeout: float = 60) -> int:
        """Waits until the store's checkpoint reaches ``seq``; returns it."""
        state = {}

        def reached():
            try:
                state["seq"] = self.checkpoint_seq(store)
            except LanError as error:  # a server being restarted
                state["error"] = str(error)
                return None
            return state["seq"] if state["seq"] >= seq else None
        try:
            return wait_until(reached, timeout, interval=0.1, what=f"head office's checkpoint of {store} at {seq}")
        except LanError:
            raise LanError(f"head office's checkpoint of {store} stayed at {state.get('seq')} "
                           f"(wanted {seq}; {state.get('error', 'no error')})") from None

    # The WAN -----------------------------------------------------------------------------------

    def _iptables(self, action: str, rule: list[str]) -> None:
        self.host.run(["iptables", action, *rule], timeout=15)

    def wan_down(self, shop_host: Host) -> None:
        """The WAN between ``shop_host`` and head office dies: every packet between them is
        dropped on head office's host, silently (no reset, no ICMP)."""
        for rule in (["INPUT", "-s", shop_host.address, "-j", "DROP"], ["OUTPUT", "-d", shop_host.address, "-j", "DROP"]):
            self._iptables("-I", rule)
            self._dropped.append(rule)

    def wan_up(self, shop_host: Host) -> None:
        """The WAN to ``shop_host`` comes back."""
        for rule in [r for r in self._dropped if shop_host.address in r]:
            self._iptables("-D", rule)
            self._dropped.remove(rule)

    def shape(self, shop_host: Host, delay_ms: int = 200, loss: float = 0.05, rate: str = "2mbit") -> int:
        """A slow, lossy WAN for ``shop_host``: ``delay_ms`` of latency each way (a delaying relay
        on head office's host; returns the port the shop's URL must name), ``loss`` of its packets
        to head office dropped at random and head office's sending rate held to ``rate``."""
        if shop_host.name in self._relays:
            raise LanError(f"the WAN to {shop_host.name} is shaped already")
        relay = self.host.popen([PYTHON, os.path.join(HERE, "wan_relay.py"), "--listen", self.host.address,
                                 "--target", self.host.address, "--target-port", str(self.port),
                                 "--delay-ms", str(delay_ms)], stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
        line = relay.stdout.readline()
        match = re.fullmatch(r"relaying (\d+)\n", line)
        if not match:
            relay.kill()
            raise LanError(f"wan_relay.py did not start: {line!r}")
        self._relays[shop_host.name] = relay
        if loss > 0:
            rule = ["INPUT", "-s", shop_host.address, "-m", "statistic", "--mode", "random",
                    "--probability", f"{loss:.3f}", "-j", "DROP"]
            self._iptables("-I", rule)
            self._dropped.append(rule)
        self.host.run(["tc", "qdisc", "replace", "dev", self.host.interface, "root", "tbf", "rate", rate,
                       "burst", "32kbit", "latency", "400ms"], timeout=15)
        return int(match.group(1))

    def unshape(self, shop_host: Host) -> None:
        """The WAN to ``shop_host`` fast again (the relay keeps relaying without delay until it
        is stopped with the LAN, so that a connection through it is not cut by this)."""
        relay = self._relays.pop(shop_host.name, None)
        if relay is not None and relay.poll() is None:
            relay.stdin.write("fast\n")
            relay.stdin.flush()
        for rule in [r for r in self._dropped if shop_host.address in r and "statistic" in r]:
            self._iptables("-D", rule)
            self._dropped.remove(rule)
        self.host.run(["tc", "qdisc", "del", "dev", self.host.interface, "root"], timeout=15, check=False)


def _quote(text: str) -> str:
    """``text`` inside an SQL string literal (single quotes doubled)."""
    return text.replace("'", "''")


def _csv_rows(text: str) -> list[dict]:
    """psql's ``--csv`` output as dicts (``\\N`` read as None)."""
    if not text.strip():
        return []
    reader = csv.DictReader(io.StringIO(text))
    return [{k: (None if v == "\\N" else v) for k, v in row.items()} for row in reader]


# Checks on what head office holds --------------------------------------------------------------


def local_journal(data_dir: str) -> list[dict]:
    """A node's journal (its SQLite file, read-only): seq, term, op id, origin, operation and the
    entry's JSON as it holds them."""
    from ordersync_lab import read_sqlite
    return read_sqlite(data_dir, "SELECT seq, term, op_id, origin, operation, message FROM journal ORDER BY seq")


def check_equals_journal(office: HeadOffice, store: str, data_dir: str, up_to: int | None = None) -> dict:
    """Head office's rows of ``store`` equal the node's journal: one lineage, seqs from the
    node's first entry to ``up_to`` (default: its last) without a gap, no seq or operation id
    twice, and each row's term, op id, operation and message byte for byte the node's (what the
    entry's hash covers: ``origin`` and ``recorded_at`` are each copy's own notes, a standby's
    differ from its master's); the checkpoint at the last seq. Returns {"rows", "lineage", "seq"}."""
    rows = office.journal(store)
    local = local_journal(data_dir)
    assert local, f"the node at {data_dir} has an empty journal"
    last = up_to if up_to is not None else local[-1]["seq"]
    lineages = sorted({row["lineage"] for row in rows})
    assert len(lineages) == 1, f"head office holds {len(lineages)} lineages of {store}: {lineages}"
    seqs = [int(row["seq"]) for row in rows]
    duplicates = len(seqs) - len(set(seqs))
    op_ids = [row["op_id"] for row in rows if row["op_id"] is not None]
    assert duplicates == 0 and len(op_ids) == len(set(op_ids)), \
        f"{store}: {duplicates} seqs and {len(op_ids) - len(set(op_ids))} operation ids twice at head office"
    expected = [entry["seq"] for entry in local if entry["seq"] <= last]
    missing = sorted(set(expected) - set(seqs))
    extra = sorted(set(seqs) - set(expected))
    assert not missing and not extra, (f"{store}: head office lacks seqs {missing[:10]} (of {len(missing)}) and has "
                                       f"{extra[:10]} (of {len(extra)}) the node does not hold up to {last}")
    assert expected == list(range(expected[0], last + 1)), f"{store}: the node's own journal has a gap"
    by_seq = {entry["seq"]: entry for entry in local}
    for row in rows:
        entry = by_seq[int(row["seq"])]
        got = (int(row["term"]), row["op_id"], int(row["operation"]), row["message"])
        want = (entry["term"], entry["op_id"], entry["operation"], entry["message"])
        assert got == want, f"{store}: seq {row['seq']} differs at head office: {got!r} != {want!r}"
    checkpoint = office.checkpoint_seq(store)
    assert checkpoint == last, f"{store}: the checkpoint is {checkpoint}, the last row {last}"
    return {"rows": len(rows), "lineage": lineages[0], "seq": last}


def wait_postgres_gone(office: HeadOffice, timeout: float = 15) -> None:
    """Waits until the server no longer runs (after ``stop``)."""
    wait_until(lambda: not office.running(), timeout, interval=0.1, what="head office's PostgreSQL to stop")


def seconds_since(started: float) -> float:
    return time.monotonic() - started
