"""A daemon whose `--metrics-listen` or `--http-listen` port cannot be bound refuses to start
before it writes anything (issue 27, item 2): the ports are bound with the terminals' port,
once the data directory's lock is held and before the node key or the store is made, so the
refusal comes before a schema migration (and its copy in `backups/`), before a restored
backup's adoption (a new term, `backup.made_ms` cleared), before a dashboard certificate is
made, and before a fresh directory gets a key or a store.

A master and a paired till run once on a simulated host to make real data directories (orders,
a backup with its keys); copies of them are then started with a port another program holds,
in both log formats (`test_startup_failures.assert_refused`: one `start.port_in_use` event at
priority 3, exit 75, the directory byte for byte as it was). Each refused start must also say
nothing but its refusal: a start that opened the store first logs what it did there (even
where it removes a new key and store again on the way out).
"""

import ctypes
import os
import shutil
import socket
import sqlite3
import struct

import pytest

from ordersync_lab import OrderSyncNode, wait_converged
from test_startup_failures import TRY_AGAIN, UNAVAILABLE, assert_refused, snapshot, start
from test_upgrade import PREVIOUS, previous_schema, user_version

pytestmark = pytest.mark.usefixtures("ordersync_built")

BACKUP_MARK = "backup.made_ms"


def busy_port():
    """A loopback port a listening socket of this process holds (close it when done)."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    return taken


def metadata(data_dir, key):
    """The store's metadata `key` (read only), or None."""
    connection = sqlite3.connect(f"file:{os.path.join(data_dir, 'ordersync.sqlite')}?mode=ro", uri=True)
    try:
        row = connection.execute("SELECT value FROM metadata WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None
    finally:
        connection.close()


def copy_dir(source, target):
    shutil.copytree(source, target, symlinks=True)
    os.chmod(target, 0o700)
    return target


@pytest.fixture
def dirs(make_lan, tmp_path):
    """Data directories of a real master and till: the master's and the till's taken back to
    schema 12 (as the previous release left them), a restored backup of the master with its
    keys, and an empty one."""
    h1 = make_lan(1).hosts[0]
    master = OrderSyncNode.master(h1, store="shop1", port=17751, data_dir=os.path.join(h1.dir, "master"))
    master.wait_api()
    till = OrderSyncNode.slave(h1, master_url="ws://127.0.0.1:17751/",
                               data_dir=os.path.join(h1.dir, "till"))
    till.wait_live()
    master.create(customer="Ada")
    backup = os.path.join(h1.dir, "shop1-backup.sqlite")
    keys = master.cli("backup", backup, "--json")
    assert keys.returncode == 0, keys
    till.create(customer="Grace")
    wait_converged([master, till], timeout=30, expect=2)
    assert till.stop() == 0 and master.stop() == 0

    out = {"fresh": str(tmp_path / "fresh")}
    os.mkdir(out["fresh"], 0o700)
    out["master12"] = copy_dir(master.data_dir, str(tmp_path / "master12"))
    previous_schema(os.path.join(out["master12"], "ordersync.sqlite"))
    out["till12"] = copy_dir(till.data_dir, str(tmp_path / "till12"))
    previous_schema(os.path.join(out["till12"], "ordersync.sqlite"))
    restored = str(tmp_path / "restored")
    os.mkdir(restored, 0o700)
    shutil.copyfile(backup, os.path.join(restored, "ordersync.sqlite"))
    os.chmod(os.path.join(restored, "ordersync.sqlite"), 0o600)
    for name in os.listdir(backup + ".keys"):
        shutil.copy2(os.path.join(backup + ".keys", name), os.path.join(restored, name))
    out["restored"] = restored
    assert metadata(restored, BACKUP_MARK), "a backup carries its mark"
    return out


def names_created(path, action):
    """Runs `action()` and returns the names made in the directory `path` meanwhile, even those
    removed again before it returned (inotify(7) `IN_CREATE` events, read once it is done)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert fd >= 0, os.strerror(ctypes.get_errno())
    try:
        assert libc.inotify_add_watch(fd, os.fsencode(path), 0x100) >= 0, os.strerror(ctypes.get_errno())  # IN_CREATE
        action()
        data = b""
        while True:
            try:
                data += os.read(fd, 1 << 16)
            except BlockingIOError:
                break
        names, offset = [], 0
        while offset < len(data):
            # struct inotify_event: int wd; uint32_t mask, cookie, len; char name[len].
            _, _, _, length = struct.unpack_from("iIII", data, offset)
            names.append(data[offset + 16:offset + 16 + length].rstrip(b"\0").decode())
            offset += 16 + length
        return names
    finally:
        os.close(fd)


def refused_alone(tmp_path, argv, data_dir, fix_has="--port", status=TRY_AGAIN, event="start.port_in_use"):
    """`assert_refused`; and the refusal is the only line the start wrote, and the only name it
    made in the data directory, even for a moment, is its lock file (a start that made a key or
    a store and removed them again on the way out made them)."""
    fields = assert_refused(tmp_path, argv, event, status, data_dir, True, fix_has)
    result = []
    made = names_created(data_dir, lambda: result.extend(start(tmp_path, argv)))
    code, lines = result
    assert code == status and len(lines) == 1 and event in lines[0], lines
    assert set(made) <= {"ordersync.lock"}, made
    return fields


def check_untouched(name, path):
    """What each kind of directory must still be after a refused start (checked last: reading a
    store may leave its `-wal` and `-shm` files)."""
    if name == "fresh":
        assert os.listdir(path) == [], os.listdir(path)
        return
    assert not os.path.exists(os.path.join(path, "backups")), os.listdir(os.path.join(path, "backups"))
    assert not os.path.exists(os.path.join(path, "dashboard-cert.pem")), sorted(os.listdir(path))
    if name.endswith("12"):
        assert user_version(os.path.join(path, "ordersync.sqlite")) == PREVIOUS
    if name == "restored":
        assert metadata(path, BACKUP_MARK), "the backup's mark is still there: it was not adopted"


@pytest.mark.parametrize("kind", ["master12", "restored", "fresh"])
@pytest.mark.parametrize("flag", ["--metrics-listen", "--http-listen"])
def test_a_masters_busy_metrics_or_dashboard_port_refuses_before_anything_is_written(dirs, tmp_path, flag, kind):
    path = dirs[kind]
    before = snapshot(path)
    taken = busy_port()
    port = taken.getsockname()[1]
    # Over TLS (`--http-tls on`) the dashboard's certificate would be made in the data
    # directory: not before every port is bound.
    argv = ["master", "--data-dir", path, "--store", "shop1", "--listen", "127.0.0.1", "--port", "0",
            flag, f"127.0.0.1:{port}", "--http-tls", "on"]
    if flag == "--metrics-listen":
        argv += ["--http-listen", "127.0.0.1:0"]
    try:
        fields = refused_alone(tmp_path, argv, path, fix_has=flag)
    finally:
        taken.close()
    assert flag in fields["error"] and f"127.0.0.1:{port}" in fields["error"] and fields["role"] == "master", fields
    assert snapshot(path) == before, kind
    check_untouched(kind, path)


@pytest.mark.parametrize("kind", ["till12", "fresh"])
def test_a_slaves_busy_metrics_port_refuses_before_anything_is_written(dirs, tmp_path, kind):
    path = dirs[kind]
    before = snapshot(path)
    argv = ["slave", "--data-dir", path, "--master", "ws://127.0.0.1:9/"]
    if kind == "fresh":
        argv += ["--pair", "7KQ4-M2XD-9HZC-B0RT"]
    taken = busy_port()
    port = taken.getsockname()[1]
    try:
        fields = refused_alone(tmp_path, argv + ["--metrics-listen", f"127.0.0.1:{port}"], path, fix_has="--metrics-listen")
    finally:
        taken.close()
    assert "--metrics-listen" in fields["error"] and fields["role"] == "slave", fields
    # An address this host lacks (TEST-NET-1, RFC 5737) is refused as early, as unavailable.
    refused_alone(tmp_path, argv + ["--metrics-listen", "192.0.2.1:9420"], path, fix_has="--metrics-listen",
                  status=UNAVAILABLE, event="start.listen_failed")
    assert snapshot(path) == before, kind
    check_untouched(kind, path)
