"""A daemon that refuses to start says so as a log event journald can filter, exits with the
status Docs/OPERATIONS.md ("Start-up refusals") lists, and leaves its data directory as it was.

Each refusal is run as `ordersync master` or `ordersync slave` would be by systemd: stderr to a
file whose device and inode `JOURNAL_STREAM` names (so every line starts with its syslog
priority, `<3>` for an error), in the text (logfmt) and the JSON format. The data directory is
compared byte for byte before and after: a refusal writes nothing (an empty one stays empty).
The refusals need no LAN, except the store mismatch, which first runs a master on a simulated
host (it publishes).
"""

import fcntl
import json
import os
import re
import socket
import subprocess
import sys

import pytest

from ordersync_lab import OrderSyncNode, ordersync_binary

pytestmark = pytest.mark.usefixtures("ordersync_built")

USAGE, DATA_ERROR, UNAVAILABLE, TRY_AGAIN, PERMISSION, CONFIG = 64, 65, 69, 75, 77, 78
PAIRING_CODE = "7KQ4-M2XD-9HZC-B0RT"
UNIT_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "Packaging", "debian")


def snapshot(path):
    """Every file under `path` (relative name -> bytes and mode); None when it does not exist."""
    if not os.path.exists(path):
        return None
    out = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(root, name)
            st = os.lstat(full)
            data = open(full, "rb").read() if os.path.isfile(full) and not os.path.islink(full) else None
            out[os.path.relpath(full, path)] = (data, st.st_mode)
    return out


def start(tmp_path, argv, log_format="text", env=None):
    """Runs `ordersync ARGV` to its exit with stderr to a file that JOURNAL_STREAM names;
    returns (exit status, stderr lines)."""
    log = tmp_path / f"stderr-{log_format}-{len(os.listdir(tmp_path))}.log"
    with open(log, "wb") as f:
        st = os.fstat(f.fileno())
        environment = {k: v for k, v in os.environ.items() if not k.startswith("ORDERSYNC_")}
        environment.update({"ORDERSYNC_CONFIG": "/dev/null", "JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"})
        environment.update(env or {})
        argv = [ordersync_binary(), *argv, "--log-format", log_format]
        code = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=f,
                              env=environment, timeout=30).returncode
    return code, log.read_text(errors="replace").splitlines()


def refusal(lines, log_format):
    """The one start refusal among `lines`: its priority and its fields (parsed)."""
    found = [line for line in lines if "start." in line and ("level=error" in line or '"level":"error"' in line)]
    assert len(found) == 1, lines
    match = re.fullmatch(r"<(\d)>(.*)", found[0])
    assert match, f"no syslog priority: {found[0]}"
    body = match.group(2)
    if log_format == "json":
        fields = json.loads(body)
    else:
        fields = {k: v.strip('"') for k, v in re.findall(r'([\w.]+)=("(?:[^"\\]|\\.)*"|\S+)', body)}
        assert body.startswith("ts="), body
    return int(match.group(1)), fields


def assert_refused(tmp_path, argv, event, status, data_dir, restart_mends, fix_has, env=None, prepare=None):
    """Runs the refusal in both formats: exit `status`, one `event` at priority 3 (error) with
    the fix and the exit code, and the data directory as it was."""
    for log_format in ("text", "json"):
        before = snapshot(data_dir)
        code, lines = start(tmp_path, argv, log_format, env)
        priority, fields = refusal(lines, log_format)
        assert code == status, (code, lines)
        assert priority == 3 and fields["level"] == "error", lines
        assert fields["event"] == event, fields
        assert fix_has in fields["fix"], fields
        assert str(fields["exit_code"]) == str(status), fields
        assert str(fields["restart_mends"]).lower() == str(restart_mends).lower(), fields
        assert fields["error"], fields
        if log_format == "json":
            assert fields["exit_code"] == status and fields["restart_mends"] is restart_mends, fields
        assert snapshot(data_dir) == before, f"{event}: the data directory changed"
    return fields


@pytest.fixture
def empty_dir(tmp_path):
    path = tmp_path / "data"
    path.mkdir(mode=0o700)
    os.chmod(path, 0o700)
    return str(path)


def test_a_port_in_use_is_a_temporary_refusal_and_writes_nothing(tmp_path, empty_dir):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        fields = assert_refused(
            tmp_path, ["master", "--data-dir", empty_dir, "--store", "shop1", "--listen", "127.0.0.1", "--port", str(port)],
            "start.port_in_use", TRY_AGAIN, empty_dir, True, "--port")
        assert f"127.0.0.1:{port}" in fields["error"] and fields["role"] == "master", fields
    finally:
        taken.close()
    assert os.listdir(empty_dir) == []


def test_a_held_lock_is_refused_and_the_holders_files_stay_as_they_were(tmp_path, empty_dir):
    lock_path = os.path.join(empty_dir, "ordersync.lock")
    with open(lock_path, "w") as lock:
        lock.write("12345\n")
        lock.flush()
        os.chmod(lock_path, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for role, extra in (("master", ["--port", "0", "--listen", "127.0.0.1"]),
                            ("slave", ["--master", "ws://127.0.0.1:9/", "--pair", PAIRING_CODE])):
            assert_refused(tmp_path, [role, "--data-dir", empty_dir, *extra], "start.lock_held", TRY_AGAIN,
                           empty_dir, True, "stop the other ordersync")
    assert os.listdir(empty_dir) == ["ordersync.lock"]


def test_a_slave_neither_paired_nor_given_a_code_is_refused_before_writing(tmp_path, empty_dir):
    fields = assert_refused(tmp_path, ["slave", "--data-dir", empty_dir, "--master", "ws://127.0.0.1:9/"],
                            "start.not_paired", CONFIG, empty_dir, False, "ordersync pair")
    assert fields["role"] == "slave", fields
    assert os.listdir(empty_dir) == []
    # A missing data directory is not made either.
    missing = str(tmp_path / "not-made")
    assert_refused(tmp_path, ["slave", "--data-dir", missing, "--master", "ws://127.0.0.1:9/"],
                   "start.not_paired", CONFIG, missing, False, "--pair")
    assert not os.path.exists(missing)


def test_bad_settings_on_the_command_line_or_in_the_file_are_usage_refusals(tmp_path, empty_dir):
    fields = assert_refused(tmp_path, ["master", "--data-dir", empty_dir, "--port", "99999"],
                            "start.bad_settings", USAGE, empty_dir, False, "ordersync master --help")
    assert "--port must be 0-65535" in fields["error"], fields
    settings = tmp_path / "ordersync.conf"
    settings.write_text("[slave]\nping-interval = soon\n")
    fields = assert_refused(tmp_path, ["slave", "--data-dir", empty_dir], "start.bad_settings", USAGE, empty_dir, False,
                            "setting", env={"ORDERSYNC_CONFIG": str(settings)})
    assert str(settings) in fields["error"], fields
    assert os.listdir(empty_dir) == []


def test_a_data_directory_others_may_write_is_a_permission_refusal(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    fields = assert_refused(tmp_path, ["master", "--data-dir", str(shared), "--port", "0", "--listen", "127.0.0.1"],
                            "start.permission_denied", PERMISSION, str(shared), False, "chmod 700")
    assert "mode 777" in fields["error"], fields
    assert os.listdir(shared) == []


def test_a_listen_address_this_host_lacks_is_unavailable(tmp_path, empty_dir):
    # 192.0.2.1 (TEST-NET-1, RFC 5737) is on no interface here: EADDRNOTAVAIL.
    assert_refused(tmp_path, ["master", "--data-dir", empty_dir, "--port", "0", "--listen", "192.0.2.1"],
                   "start.listen_failed", UNAVAILABLE, empty_dir, True, "--listen")
    assert os.listdir(empty_dir) == []


def test_a_store_mismatch_is_a_data_error(tmp_path, make_lan):
    h1 = make_lan(1).hosts[0]
    data = os.path.join(h1.dir, "mismatch")
    master = OrderSyncNode.master(h1, store="shop1", data_dir=data)
    master.wait_api()
    assert master.stop() == 0
    before = snapshot(data)
    for log_format in ("text", "json"):
        result = h1.run([ordersync_binary(), "master", "--data-dir", data, "--store", "shop2", "--port", "0",
                         "--log-format", log_format], check=False, env={**os.environ, "ORDERSYNC_CONFIG": "/dev/null"})
        assert result.returncode == DATA_ERROR, result.stderr
        line = next(line for line in result.stderr.splitlines() if "start.store_mismatch" in line)
        fields = json.loads(line) if log_format == "json" else None
        if fields:
            assert fields["level"] == "error" and "holds store 'shop1', not 'shop2'" in fields["error"], fields
            assert "--store" in fields["fix"] and fields["exit_code"] == DATA_ERROR, fields
        else:
            assert line.startswith("ts=") and "level=error" in line and "exit_code=65" in line, line
        assert snapshot(data) == before, "the store is read, not written"


def test_units_do_not_restart_what_a_restart_cannot_mend():
    """The units' RestartPreventExitStatus= lists exactly the codes of refusals a restart cannot
    mend (Docs/OPERATIONS.md's table, parsed), and none that it can."""
    table = refusal_table()
    never = {code for _, code, mends in table if not mends}
    always = {code for _, code, mends in table if mends}
    assert never and always and not never & always, table
    for unit in ("ordersync-master.service", "ordersync-slave.service"):
        settings = {}
        for line in open(os.path.join(UNIT_DIR, unit)):
            key, sep, value = line.strip().partition("=")
            if sep and not key.startswith("#"):
                settings.setdefault(key, []).append(value)
        prevent = {int(code) for value in settings["RestartPreventExitStatus"] for code in value.split()}
        assert prevent == never, (unit, sorted(prevent), sorted(never))
        assert settings["Restart"] == ["on-failure"], unit
        assert "StartLimitIntervalSec" in settings and "StartLimitBurst" in settings, unit


def refusal_table():
    """(event, exit code, restart mends it) for each row of OPERATIONS' "Start-up refusals"."""
    text = open(os.path.join(os.path.dirname(UNIT_DIR), "..", "Docs", "OPERATIONS.md")).read()
    section = text.split("## Start-up refusals", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(start\.[a-z_]+)` \| [a-z]+ \((\d)\) \| (\d+) \| (yes|no) \|", section, re.M)
    assert len(rows) >= 10, section
    return [(event, int(code), mends == "yes") for event, _, code, mends in rows]


def test_a_typo_of_a_command_is_named_with_the_nearest_one(tmp_path):
    """`ordersync stauts` with the packaged settings file: the typo is named, not a setting."""
    settings = tmp_path / "ordersync.conf"
    settings.write_text("data-dir = /var/lib/ordersync\n\n[master]\nport = 7420\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORDERSYNC_")}
    env["ORDERSYNC_CONFIG"] = str(settings)
    typo = subprocess.run([ordersync_binary(), "stauts"], capture_output=True, text=True, env=env, timeout=30)
    assert typo.returncode == USAGE, typo
    assert typo.stderr == "ordersync: unknown command 'stauts'; did you mean 'status'?\n", typo.stderr
    far = subprocess.run([ordersync_binary(), "frobnicate"], capture_output=True, text=True, env=env, timeout=30)
    assert far.returncode == USAGE and "unknown command 'frobnicate'" in far.stderr and "--help" in far.stderr, far
    # A command spelled right still runs with the file (here: no daemon at its data directory).
    status = subprocess.run([ordersync_binary(), "status"], capture_output=True, text=True, env=env, timeout=30)
    assert "unknown command" not in status.stderr, status


def test_a_busy_metrics_port_leaves_an_existing_store_as_it_was(tmp_path, make_lan):
    """A busy --metrics-listen port (bound with the terminals' port, before the store opens)
    leaves the store of an earlier start byte for byte, and starts no daemon."""
    h1 = make_lan(1).hosts[0]
    data = os.path.join(h1.dir, "existing")
    master = OrderSyncNode.master(h1, store="shop1", data_dir=data)
    master.wait_api()
    master.create(customer="Ada")
    assert master.stop() == 0
    before = snapshot(data)
    assert "ordersync.sqlite" in before and "node.key" in before, sorted(before)
    # The port is taken on the master's own host (its network namespace).
    holder = h1.popen([sys.executable, "-c", "import socket, sys, time\n"
                       "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
                       "print(s.getsockname()[1], flush=True); time.sleep(120)"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(holder.stdout.readline())
        result = h1.run([ordersync_binary(), "master", "--data-dir", data, "--port", "0",
                         "--metrics-listen", f"127.0.0.1:{port}", "--log-format", "json"],
                        check=False, env={**os.environ, "ORDERSYNC_CONFIG": "/dev/null"})
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert result.returncode == TRY_AGAIN, result.stderr
    event = json.loads(next(line for line in result.stderr.splitlines() if "start.port_in_use" in line))
    assert "--metrics-listen" in event["error"] and event["restart_mends"] is True, event
    assert snapshot(data) == before, "the store, key and lock are as the last start left them"
