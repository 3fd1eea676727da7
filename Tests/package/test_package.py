"""The Debian package, installed on this machine with dpkg as a shop's IT person would: files,
the system user, modes, `systemd-analyze verify` on the units (the roll-up's too), `--version`,
completions, man pages; then each unit's ExecStart line run as the unit's user with a NOTIFY_SOCKET this test
listens on, as systemd runs a Type=notify service: READY=1 only once the store is open, the
service published and the sockets listening; WATCHDOG=1 pings; STOPPING=1 on SIGTERM and exit 0.

The master runs on a simulated host (Tests/lan) with its own D-Bus and avahi-daemon. The package
is built by Scripts/package-deb.sh (a release build); ORDERSYNC_RELEASE_BIN=PATH reuses a release
binary. Needs root, dpkg-dev, systemd (for systemd-analyze) and what Tests/lan needs; skipped
without them, failed under CI mode. The package is purged afterwards.
"""

import glob
import grp
import gzip
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "Tests", "lan"))

from lan_support import require, require_lan  # noqa: E402
from lanharness import Lan, wait_until  # noqa: E402

DATA_DIR = "/var/lib/ordersync"
UNITS = ("ordersync-master.service", "ordersync-slave.service")


# dpkg -i and --purge run man-db's trigger, which rebuilds the manual page index: 1-2 s on an idle
# machine, but it timed out at 120 s in a whole test run beside the sanitizer builds (Docs/TESTING.md).
DPKG_TIMEOUT = 900


def sh(argv, check=True, **kw):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {result.returncode}: {result.stderr}{result.stdout}")
    return result


def installed_version():
    result = sh(["dpkg-query", "-W", "-f=${Status}", "ordersync"], check=False)
    return result.returncode == 0 and "installed" in result.stdout and "not-installed" not in result.stdout


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """Builds the package, installs it with dpkg -i, and purges it (and the user and data
    directory it made) afterwards. Yields the .deb's path."""
    require(os.geteuid() == 0, "installing a package needs root")
    missing = [t for t in ("dpkg-deb", "dpkg-shlibdeps", "systemd-analyze", "setpriv", "adduser") if not shutil.which(t)]
    require(not missing, "missing: " + ", ".join(missing) + " (apt-get install dpkg-dev systemd adduser util-linux)")
    require(not installed_version(), "an ordersync package is installed already on this machine")
    had_user = _exists(pwd.getpwnam, "ordersync")
    had_group = _exists(grp.getgrnam, "ordersync")
    had_data = os.path.exists(DATA_DIR)
    out = tmp_path_factory.mktemp("deb")
    # gzip: xz takes a minute on an 80 MB binary; what is packaged is the same.
    build = sh([os.path.join(REPO, "Scripts", "package-deb.sh"), "-o", str(out), "-Z", "gzip"], timeout=3000, cwd=REPO)
    deb = build.stdout.strip().splitlines()[-1]
    assert os.path.basename(deb) == f"ordersync_{_version()}_{sh(['dpkg', '--print-architecture']).stdout.strip()}.deb"
    try:
        sh(["dpkg", "-i", deb], timeout=DPKG_TIMEOUT)
        yield deb
    finally:
        sh(["dpkg", "--purge", "ordersync"], check=False, timeout=DPKG_TIMEOUT)
        if not had_data:
            shutil.rmtree(DATA_DIR, ignore_errors=True)
        if not had_user:
            sh(["userdel", "ordersync"], check=False)
        if not had_group and _exists(grp.getgrnam, "ordersync"):
            sh(["groupdel", "ordersync"], check=False)


def _exists(lookup, name):
    try:
        lookup(name)
        return True
    except KeyError:
        return False


def _version():
    source = open(os.path.join(REPO, "Sources/Node/OrderSyncNode/Config/NodeConfiguration.swift")).read()
    return re.search(r'public static let string = "([^"]+)"', source).group(1)


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_files_user_modes_and_dependencies(package):
    files = set(sh(["dpkg", "-L", "ordersync"]).stdout.split())
    for path in ("/usr/bin/ordersync", "/lib/systemd/system/ordersync-master.service",
                 "/lib/systemd/system/ordersync-slave.service", "/etc/ordersync/ordersync.conf",
                 "/usr/share/man/man1/ordersync.1.gz", "/usr/share/man/man1/ordersync.master.1.gz",
                 "/usr/share/man/man1/ordersync.slave.1.gz", "/usr/share/bash-completion/completions/ordersync",
                 "/usr/share/zsh/vendor-completions/_ordersync", "/usr/share/fish/vendor_completions.d/ordersync.fish",
                 "/usr/share/ordersync/ordersync-alerts.yml", "/usr/share/ordersync/ordersync-rollup-alerts.yml"):
        assert path in files, path
        info = os.stat(path)
        assert info.st_uid == 0 and info.st_gid == 0, path
        assert _mode(path) == (0o755 if path == "/usr/bin/ordersync" else 0o644), (path, oct(_mode(path)))
    conffiles = sh(["dpkg-query", "-W", "-f=${Conffiles}", "ordersync"]).stdout
    assert "/etc/ordersync/ordersync.conf" in conffiles

    user = pwd.getpwnam("ordersync")
    assert user.pw_uid < 1000, "a system user"
    assert grp.getgrgid(user.pw_gid).gr_name == "ordersync", "a group of its own"
    assert user.pw_shell in ("/usr/sbin/nologin", "/bin/false")
    assert user.pw_dir == DATA_DIR

    depends = sh(["dpkg-query", "-W", "-f=${Depends}", "ordersync"]).stdout
    names = {d.strip().split()[0] for d in depends.split(",")}
    assert {"libavahi-client3", "libsqlite3-0", "libssl3", "libc6", "avahi-daemon"} <= names, depends
    # The Swift runtime is linked in: nothing is loaded from the toolchain.
    ldd = sh(["ldd", "/usr/bin/ordersync"]).stdout
    assert "/opt/swift" not in ldd and "libswiftCore" not in ldd and "not found" not in ldd, ldd


def test_the_package_makes_the_state_directory_without_systemd(package):
    """postinst makes /var/lib/ordersync as the units' StateDirectory= would (this machine runs
    no systemd), so that a daemon started by hand can use it."""
    user = pwd.getpwnam("ordersync")
    info = os.stat(DATA_DIR)
    assert stat.S_ISDIR(info.st_mode) and (info.st_uid, info.st_gid) == (user.pw_uid, user.pw_gid), info
    assert _mode(DATA_DIR) == 0o750
    for unit in UNITS:
        assert _unit_settings(f"/lib/systemd/system/{unit}")["StateDirectoryMode"] == ["0750"], unit


def test_changelog_copyright_and_a_stripped_binary(package):
    doc = "/usr/share/doc/ordersync"
    files = set(sh(["dpkg", "-L", "ordersync"]).stdout.split())
    assert {f"{doc}/changelog.gz", f"{doc}/copyright"} <= files
    changelog = gzip.open(f"{doc}/changelog.gz", "rt").read()
    assert changelog.startswith(f"ordersync ({_version()}) "), changelog[:80]
    copyright_text = open(f"{doc}/copyright").read()
    assert copyright_text.startswith("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
    for name in ("Apache-2.0", "swift-argument-parser", "Runtime-Library-Exception"):
        assert name in copyright_text, name
    # swift-crypto (and the BoringSSL it embedded) left the package: the binary no longer holds them.
    assert "BoringSSL" not in copyright_text and "swift-crypto" not in copyright_text
    kind = sh(["file", "-L", "/usr/bin/ordersync"]).stdout
    assert ", stripped" in kind, kind
    debug = package[: -len(".deb")] + ".debug"
    assert os.path.getsize(debug) > 1_000_000, "the debug information is kept next to the package"
    assert ".gnu_debuglink" in sh(["objdump", "-h", "/usr/bin/ordersync"]).stdout
    print(f"FIGURE package binary: {os.path.getsize('/usr/bin/ordersync') / 1e6:.1f} MB stripped, "
          f"debug file {os.path.getsize(debug) / 1e6:.1f} MB")


def test_lintian_finds_no_errors(package):
    require(shutil.which("lintian") is not None, "lintian is missing (apt-get install lintian; Scripts/setup.sh)")
    result = sh(["lintian", "--no-tag-display-limit", package], check=False, timeout=600)
    tags = [line for line in result.stdout.splitlines() if line[:2] in ("E:", "W:")]
    errors = [line for line in tags if line.startswith("E:")]
    assert not errors, "\n".join(tags)
    for topic in ("changelog", "copyright", "unstripped"):
        assert not [line for line in tags if topic in line], "\n".join(tags)


def _documented_exit_codes():
    """The codes of OPERATIONS.md's "Exit codes" table."""
    text = open(os.path.join(REPO, "Docs", "OPERATIONS.md")).read()
    section = text.split("\n## Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)}


def test_man_pages_list_the_exit_codes_and_the_files(package):
    codes = _documented_exit_codes()
    assert {0, 1, 64, 66, 74, 75, 77, 78} <= codes, codes
    pages = sorted(glob.glob("/usr/share/man/man1/ordersync*.1.gz"))
    assert len(pages) > 10, pages
    for path in pages:
        page = gzip.open(path, "rt").read()
        assert ".Ex -std" not in page, path
        assert '.Sh "EXIT STATUS"' in page and ".Sh FILES" in page, path
        assert page.index(".Sh FILES") < page.index('.Sh "EXIT STATUS"'), path
        listed = {int(c) for c in re.findall(r"^\.It (\d+)$", page.split('.Sh "EXIT STATUS"', 1)[1], re.M)}
        if path.endswith("/ordersync.check.1.gz"):
            expected = {0, 1, 2, 3}
        elif os.path.basename(path).startswith("ordersync.rollup"):
            expected = {0, 1, 64, 65, 69, 78}  # the roll-up's own codes (OPERATIONS, "Head office roll-up")
        else:
            expected = codes
        assert listed == expected, (path, sorted(listed))
        for name in ("/etc/ordersync/ordersync.conf", "/var/lib/ordersync/ordersync.sqlite",
                     "/var/lib/ordersync/node.key", "/var/lib/ordersync/ordersync.sock"):
            assert name in page, (path, name)
    render = sh(["man", "-l", "/usr/share/man/man1/ordersync.check.1.gz"], env={**os.environ, "MANPAGER": "cat"})
    assert "EXIT STATUS" in render.stdout and "UNKNOWN" in render.stdout and "FILES" in render.stdout, render.stdout


def test_an_upgrade_without_systemd_names_a_daemon_started_by_hand(package, tmp_path):
    """No systemd here: reinstalling (an upgrade for the postinst) restarts nothing, and names
    the running daemon with the commands that restart it."""
    data_dir = tmp_path / "hand"
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "ORDERSYNC_CONFIG": "/dev/null"}
    argv = ["/usr/bin/ordersync", "slave", "--data-dir", str(data_dir), "--master", "ws://127.0.0.1:9/",
            "--pair", "7KQ4-M2XD-9HZC-B0RT"]
    daemon = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(data_dir / "ordersync.sock"):
            assert daemon.poll() is None and time.monotonic() < deadline, "the slave did not start"
            time.sleep(0.05)
        upgrade = sh(["dpkg", "-i", package], timeout=DPKG_TIMEOUT)
        assert daemon.poll() is None, "a daemon started by hand is not stopped by the upgrade"
        assert f"the daemon {daemon.pid} ({' '.join(argv)}, user root)" in upgrade.stderr, upgrade.stderr
        assert f"kill -TERM {daemon.pid}" in upgrade.stderr and f"runuser -u root -- {' '.join(argv)}" in upgrade.stderr
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


def test_units_verify_and_say_what_the_issue_asks(package):
    for unit in UNITS:
        path = f"/lib/systemd/system/{unit}"
        result = sh(["systemd-analyze", "verify", path], check=False)
        assert result.returncode == 0, result.stderr + result.stdout
        settings = _unit_settings(path)
        role = unit.split("-")[1].split(".")[0]
        assert settings["ExecStart"] == [f"/usr/bin/ordersync {role}"]
        for key, value in (("Type", "notify"), ("Restart", "on-failure"), ("StateDirectory", "ordersync"),
                           ("User", "ordersync"), ("Group", "ordersync"), ("NoNewPrivileges", "yes"),
                           ("ProtectSystem", "strict"), ("ProtectHome", "yes"), ("PrivateTmp", "yes"),
                           ("RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6 AF_NETLINK"), ("WatchdogSec", "30s"),
                           ("RestartPreventExitStatus", "64 65 66 73 74 77 78"), ("RestartSec", "5s"),
                           ("StartLimitBurst", "10"), ("StartLimitIntervalSec", "120s")):
            assert settings.get(key) == [value], (unit, key, settings.get(key))
        assert "avahi-daemon.service" in " ".join(settings["After"]).split()
        assert "avahi-daemon.service" in " ".join(settings["Wants"]).split()
        # Exactly the codes of the refusals a restart cannot mend (OPERATIONS, "Start-up refusals").
        prevent = {int(code) for code in settings["RestartPreventExitStatus"][0].split()}
        assert prevent == {code for code, mends in _refusal_codes() if not mends}, (unit, sorted(prevent))
        assert not prevent & {code for code, mends in _refusal_codes() if mends}, unit


ROLLUP_UNIT = "/lib/systemd/system/ordersync-rollup.service"
ROLLUP_ENV = "/etc/ordersync/rollup.env"


def test_the_rollup_unit_keeps_the_password_off_the_command_line(package):
    """ordersync-rollup.service (issue 28): after the daemon of the store it reads, its URL (with
    the password) from a conffile only root reads (systemd reads it before dropping to the service
    user) into the environment, nothing of it on the command line; restarted on a crash, not on
    what a restart cannot mend (64 no URL, 65 conflict or gap, 78 configuration). Head office's
    setup SQL ships with it."""
    files = set(sh(["dpkg", "-L", "ordersync"]).stdout.split())
    sql = ("/usr/share/ordersync/postgresql/ordersync-head-office.sql", "/usr/share/ordersync/postgresql/ordersync-add-shop.sql")
    for path, mode in ((ROLLUP_UNIT, 0o644), (ROLLUP_ENV, 0o600), (sql[0], 0o644), (sql[1], 0o644),
                       ("/usr/share/man/man1/ordersync.rollup.1.gz", 0o644)):
        assert path in files, path
        info = os.stat(path)
        assert (info.st_uid, info.st_gid, _mode(path)) == (0, 0, mode), (path, info.st_uid, oct(_mode(path)))
    for path in sql:
        assert open(path).read() == open(os.path.join(REPO, "Packaging", "postgresql", os.path.basename(path))).read()
    assert ROLLUP_ENV in sh(["dpkg-query", "-W", "-f=${Conffiles}", "ordersync"]).stdout
    depends = sh(["dpkg-query", "-W", "-f=${Depends}", "ordersync"]).stdout
    assert "libpq5" in {d.strip().split()[0] for d in depends.split(",")}, depends

    result = sh(["systemd-analyze", "verify", ROLLUP_UNIT], check=False)
    assert result.returncode == 0, result.stderr + result.stdout
    settings = _unit_settings(ROLLUP_UNIT)
    for key, value in (("Type", "exec"), ("Restart", "on-failure"), ("RestartSec", "10s"),
                       ("RestartPreventExitStatus", "64 65 78"), ("EnvironmentFile", ROLLUP_ENV),
                       ("User", "ordersync"), ("Group", "ordersync"), ("StateDirectory", "ordersync"),
                       ("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("PrivateTmp", "yes"),
                       ("RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6 AF_NETLINK")):
        assert settings.get(key) == [value], (key, settings.get(key))
    after = " ".join(settings["After"]).split()
    assert {"ordersync-master.service", "ordersync-slave.service", "network-online.target"} <= set(after), after
    argv = _exec_start("ordersync-rollup.service")
    assert argv == ["/usr/bin/ordersync", "rollup", "--data-dir", DATA_DIR], argv
    shipped = dict(line.split("=", 1) for line in open(ROLLUP_ENV).read().splitlines()
                   if line and not line.startswith("#"))
    assert shipped == {"ORDERSYNC_DATABASE_URL": ""}, shipped

    # The unit as shipped, before anyone sets the URL: a usage error (64), which the unit does not
    # restart, with nothing written into the data directory.
    data_dir = tempfile.mkdtemp(prefix="ordersync-rollup-")
    try:
        user = pwd.getpwnam("ordersync")
        os.chown(data_dir, user.pw_uid, user.pw_gid)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **shipped}
        refused = subprocess.run(_as_service_user(argv[:-1] + [data_dir]), env=env, capture_output=True, text=True,
                                 timeout=60)
        assert refused.returncode == 64 and "ORDERSYNC_DATABASE_URL" in refused.stderr, (refused.returncode, refused.stderr)
        assert os.listdir(data_dir) == [], os.listdir(data_dir)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def _refusal_codes():
    """(exit code, restart mends it) for each row of OPERATIONS' "Start-up refusals" table."""
    text = open(os.path.join(REPO, "Docs", "OPERATIONS.md")).read()
    section = text.split("\n## Start-up refusals", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `start\.[a-z_]+` \| [a-z]+ \(\d\) \| (\d+) \| (yes|no) \|", section, re.M)
    assert len(rows) >= 10, section
    return [(int(code), mends == "yes") for code, mends in rows]


def _unit_settings(path):
    settings = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def test_version_names_the_commit(package):
    out = sh(["/usr/bin/ordersync", "--version"]).stdout.strip()
    match = re.fullmatch(r"(\S+) \(commit ([0-9a-f]{12})(-dirty)?\)", out)
    assert match, out
    assert match.group(1) == _version()
    if not os.environ.get("ORDERSYNC_RELEASE_BIN"):
        head = sh(["git", "rev-parse", "HEAD"], cwd=REPO).stdout.strip()
        assert head.startswith(match.group(2)), (out, head)


def test_completions_and_man_pages_come_from_the_commands(package):
    bash = open("/usr/share/bash-completion/completions/ordersync").read()
    assert "master" in bash and "--data-dir" in bash and "--config" in bash and len(bash) > 2000
    zsh = open("/usr/share/zsh/vendor-completions/_ordersync").read()
    assert zsh.startswith("#compdef ordersync") and "--storepos-allow" in zsh
    fish = open("/usr/share/fish/vendor_completions.d/ordersync.fish").read()
    assert "complete -c 'ordersync'" in fish and "-l 'peer-timeout'" in fish
    # bash itself loads the completion and completes a subcommand.
    result = sh(["bash", "-c", "source /usr/share/bash-completion/completions/ordersync && "
                 "COMP_WORDS=(ordersync sla) COMP_CWORD=1 COMP_LINE='ordersync sla' COMP_POINT=13 && "
                 "_ordersync && echo \"${COMPREPLY[@]}\""])
    assert "slave" in result.stdout.split(), result.stdout + result.stderr
    master_page = gzip.open("/usr/share/man/man1/ordersync.master.1.gz", "rt").read()
    assert ".Dt ORDERSYNC.MASTER 1" in master_page and "data-dir" in master_page and "storepos-allow" in master_page
    if shutil.which("mandoc") or shutil.which("groff"):
        render = sh(["man", "-l", "/usr/share/man/man1/ordersync.slave.1.gz"], check=False, env={**os.environ, "MANPAGER": "cat"})
        assert "--master" in render.stdout or render.returncode != 0


def test_the_settings_file_lists_every_flag_of_the_daemons(package):
    """Every long flag of `ordersync master` and `ordersync slave` is a key of the shipped
    /etc/ordersync/ordersync.conf (as a setting or a commented default), and nothing else."""
    flags = set()
    for role in ("master", "slave"):
        help_text = sh(["/usr/bin/ordersync", role, "--help"]).stdout
        flags |= set(re.findall(r"^\s+(?:-\w, )?--([a-z][a-z0-9-]*)", help_text, re.M))
    flags -= {"help", "version", "config"}
    keys = set(re.findall(r"^#?\s*([a-z][a-z0-9-]*)\s*=", open("/etc/ordersync/ordersync.conf").read(), re.M))
    assert keys == flags, (sorted(keys - flags), sorted(flags - keys))


def _notify_socket():
    """A datagram socket in a folder the service user can reach, as systemd's NOTIFY_SOCKET."""
    folder = tempfile.mkdtemp(prefix="ordersync-notify-")
    os.chmod(folder, 0o755)
    path = os.path.join(folder, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    os.chmod(path, 0o666)
    return sock, path, folder


def _receive(sock, deadline):
    """The next notification (a dict of its assignments), or None at the deadline."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    sock.settimeout(remaining)
    try:
        data = sock.recv(4096)
    except socket.timeout:
        return None
    return dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)


def _exec_start(unit):
    for line in open(f"/lib/systemd/system/{unit}"):
        if line.startswith("ExecStart="):
            return shlex.split(line.split("=", 1)[1])
    raise AssertionError(f"no ExecStart in {unit}")


def _as_service_user(argv):
    return ["setpriv", "--reuid", "ordersync", "--regid", "ordersync", "--init-groups", *argv]


def _state_directory():
    """/var/lib/ordersync as systemd's StateDirectory= makes it (owner ordersync, 0750)."""
    user = pwd.getpwnam("ordersync")
    os.makedirs(DATA_DIR, exist_ok=True)
    os.chown(DATA_DIR, user.pw_uid, user.pw_gid)
    os.chmod(DATA_DIR, 0o750)


def _status_as(uid, gids, data_dir=DATA_DIR):
    """`ordersync status --json` run as uid with exactly the supplementary groups gids."""
    groups = ",".join(str(g) for g in gids) if gids else None
    argv = ["setpriv", "--reuid", str(uid), "--regid", str(gids[0] if gids else uid)]
    argv += ["--groups", groups] if groups else ["--clear-groups"]
    return sh(argv + ["/usr/bin/ordersync", "status", "--json", "--data-dir", data_dir], check=False)


def test_master_unit_notifies_ready_only_once_published_and_listening(package):
    require_lan()
    _state_directory()
    sock, notify_path, notify_dir = _notify_socket()
    lan = Lan(1).up()
    master = None
    try:
        host = lan.hosts[0]
        avahi_pid = int(open(os.path.join(host.avahi_dir, "pid")).read().strip())
        # avahi-daemon frozen: the master opens its store and listens, but cannot be published.
        os.kill(avahi_pid, signal.SIGSTOP)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "NOTIFY_SOCKET": notify_path, "WATCHDOG_USEC": "1000000"}
        master = host.popen(_as_service_user(_exec_start("ordersync-master.service")), env=env,
                            stderr=subprocess.PIPE, text=True)
        api_socket = os.path.join(DATA_DIR, "ordersync.sock")
        wait_until(lambda: _status_as(0, [0]).returncode == 0, timeout=20, what="the local API answers")
        status = json.loads(_status_as(0, [0]).stdout)
        assert status["avahi"] == "starting", status
        before_ready = []
        deadline = time.monotonic() + 3
        while (message := _receive(sock, deadline)) is not None:
            before_ready.append(message)
        assert not any("READY" in m for m in before_ready), before_ready
        assert sum(m.get("WATCHDOG") == "1" for m in before_ready) >= 3, before_ready

        os.kill(avahi_pid, signal.SIGCONT)
        deadline = time.monotonic() + 20
        ready = None
        while ready is None and (message := _receive(sock, deadline)) is not None:
            if message.get("READY") == "1":
                ready = message
        assert ready, "no READY=1 within 20 s of avahi-daemon resuming"
        # Listening and published when READY=1 arrived (nothing closes them in between).
        assert stat.S_ISSOCK(os.stat(api_socket).st_mode)
        status = json.loads(_status_as(0, [0]).stdout)
        assert status["avahi"] == "up" and status.get("serviceName"), status
        assert "published as" in ready.get("STATUS", ""), ready
        host.run([sys.executable, "-c", f"import socket; socket.create_connection(('{host.address}', 7420), 5).close()"])
        browse = host.run(["avahi-browse", "-rpt", "_pos._tcp"], timeout=20).stdout
        assert "proto=ordersync" in browse, browse

        pings = 0
        deadline = time.monotonic() + 2
        while (message := _receive(sock, deadline)) is not None:
            pings += message.get("WATCHDOG") == "1"
        assert pings >= 3, f"{pings} watchdog pings in 2 s at WATCHDOG_USEC=1 s"

        _check_modes()

        master.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        stopping = False
        while not stopping and (message := _receive(sock, deadline)) is not None:
            stopping = message.get("STOPPING") == "1"
        assert stopping, "no STOPPING=1 after SIGTERM"
        assert master.wait(timeout=40) == 0, master.stderr.read()
    finally:
        if master and master.poll() is None:
            master.kill()
        lan.down()
        sock.close()
        shutil.rmtree(notify_dir, ignore_errors=True)


def _check_modes():
    """The store, its WAL and the key 0600 under the service user; the socket 0660 in group
    ordersync, reachable by a member of that group (a POS app) and by nobody else."""
    user = pwd.getpwnam("ordersync")
    assert _mode(DATA_DIR) == 0o750
    for name in ("ordersync.sqlite", "ordersync.sqlite-wal", "ordersync.sqlite-shm", "node.key"):
        path = os.path.join(DATA_DIR, name)
        info = os.stat(path)
        assert (info.st_uid, _mode(path)) == (user.pw_uid, 0o600), (name, info.st_uid, oct(_mode(path)))
    api_socket = os.path.join(DATA_DIR, "ordersync.sock")
    info = os.stat(api_socket)
    assert (info.st_uid, info.st_gid, _mode(api_socket)) == (user.pw_uid, user.pw_gid, 0o660)
    pos_app = _status_as(65534, [65534, user.pw_gid])
    assert pos_app.returncode == 0 and json.loads(pos_app.stdout)["role"] == "master", pos_app.stderr
    stranger = _status_as(65534, [65534])
    assert stranger.returncode != 0


def test_slave_unit_notifies_ready_once_its_store_is_open_and_the_api_listens(package, tmp_path):
    """The slave's ExecStart with flags added (they win over /etc/ordersync/ordersync.conf):
    another data directory, a fixed master, no Avahi needed."""
    user = pwd.getpwnam("ordersync")
    data_dir = tempfile.mkdtemp(prefix="ordersync-slave-")
    os.chown(data_dir, user.pw_uid, user.pw_gid)
    os.chmod(data_dir, 0o750)
    sock, notify_path, notify_dir = _notify_socket()
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "NOTIFY_SOCKET": notify_path, "WATCHDOG_USEC": "600000"}
    slave = None
    try:
        argv = _exec_start("ordersync-slave.service") + ["--data-dir", data_dir, "--master", "ws://127.0.0.1:9/"]
        first = subprocess.run(_as_service_user(argv), env=env, capture_output=True, text=True, timeout=30)
        assert first.returncode == 78 and "event=start.not_paired" in first.stderr, first.stderr
        assert os.listdir(data_dir) == [], "a refused start writes nothing"
        _write_trust(data_dir)
        slave = subprocess.Popen(_as_service_user(argv), env=env, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        ready = None
        while ready is None and (message := _receive(sock, deadline)) is not None:
            if message.get("READY") == "1":
                ready = message
        assert ready and "slave" in ready.get("STATUS", ""), ready
        status = _status_as(0, [0], data_dir)
        assert status.returncode == 0 and json.loads(status.stdout)["role"] == "slave", status.stderr
        pings = 0
        deadline = time.monotonic() + 1.5
        while (message := _receive(sock, deadline)) is not None:
            pings += message.get("WATCHDOG") == "1"
        assert pings >= 3, pings
        slave.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        stopping = False
        while not stopping and (message := _receive(sock, deadline)) is not None:
            stopping = message.get("STOPPING") == "1"
        assert stopping
        assert slave.wait(timeout=30) == 0, slave.stderr.read()
    finally:
        if slave and slave.poll() is None:
            slave.kill()
        sock.close()
        shutil.rmtree(notify_dir, ignore_errors=True)
        shutil.rmtree(data_dir, ignore_errors=True)


def _write_trust(data_dir):
    """The master.trust a pairing leaves (a master key of our own; nothing connects to it)."""
    import base64
    import hashlib

    public = os.urandom(32)
    node_id = base64.b32encode(hashlib.sha256(public).digest()[:20]).decode().rstrip("=")
    trust = {"store": "pkgtest", "master": "-".join(node_id[i:i + 4] for i in range(0, len(node_id), 4)),
             "publicKey": base64.b64encode(public).decode(), "pairedAtMillis": int(time.time() * 1000),
             "codeDigest": hashlib.sha256(b"0123456789").hexdigest()}
    path = os.path.join(data_dir, "master.trust")
    with open(path, "w") as f:
        json.dump(trust, f)
    user = pwd.getpwnam("ordersync")
    os.chown(path, user.pw_uid, user.pw_gid)
    os.chmod(path, 0o600)
