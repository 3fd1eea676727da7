"""A simulated store LAN: network namespaces on a private bridge, one avahi-daemon per host.

Each host gets its own network namespace (one veth on a bridge that lives in a namespace of its
own), its own hostname, and its own ``/run/dbus`` and ``/run/avahi-daemon`` (bind mounts inside a
private mount namespace), so that every host runs its own D-Bus system bus and avahi-daemon bound
to its veth only. Nothing touches the machine's real interfaces: all traffic stays on the bridge.

Usage::

    with Lan(hosts=3) as lan:
        h1, h2, h3 = lan.hosts
        h2.run(["avahi-browse", "-rpt", "_pos._tcp"])

``Lan.down()`` always tears everything down (processes, namespaces, temporary files); it also
runs at interpreter exit and on SIGTERM/SIGHUP.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Sequence

#: Interpreter used to run the Python peer scripts (zeroconf, websockets) "on" a host.
PYTHON = os.environ.get("ORDERSYNC_PYTHON", sys.executable)

#: Folder of this file, where the peer scripts live.
HERE = os.path.dirname(os.path.abspath(__file__))

#: Tests/support: modules shared with the conformance tests (the independent secure peer).
SUPPORT = os.path.join(os.path.dirname(HERE), "support")

_REQUIRED_TOOLS = ("ip", "unshare", "dbus-daemon", "dbus-send", "avahi-daemon", "mount", "hostname")


class LanError(RuntimeError):
    """A LAN could not be set up, or a host did not reach the expected state in time."""


def missing_prerequisites() -> list[str]:
    """Returns why a LAN cannot be built on this machine; an empty list when it can."""
    missing = []
    if os.geteuid() != 0:
        missing.append("must run as root (network and mount namespaces)")
    for tool in _REQUIRED_TOOLS:
        if shutil.which(tool) is None:
            missing.append(f"`{tool}` not found in PATH")
    if not os.path.isdir("/run/dbus") and not os.access("/run", os.W_OK):
        missing.append("/run/dbus does not exist and cannot be created")
    return missing


def wait_until(predicate, timeout: float, interval: float = 0.1, what: str = "condition"):
    """Polls ``predicate`` until it returns a truthy value, which is returned; raises LanError
    naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise LanError(f"timed out after {timeout:.1f}s waiting for {what}")
        time.sleep(interval)


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise LanError(f"ip {' '.join(args)} failed: {result.stderr.strip()}")
    return result


_AVAHI_CONF = """\
[server]
use-ipv4=yes
use-ipv6=no
allow-interfaces={interface}
enable-dbus=yes
ratelimit-interval-usec=1000000
ratelimit-burst=1000

[wide-area]
enable-wide-area=no

[publish]
publish-hinfo=no
publish-workstation=no
publish-addresses=yes
publish-aaaa-on-ipv4=no

[reflector]
enable-reflector=no
"""


class Host:
    """One simulated POS terminal: a network namespace with one address on the store LAN, its
    own hostname, D-Bus system bus and avahi-daemon."""

    def __init__(self, lan: "Lan", index: int, address: str, prefix_len: int):
        self.lan = lan
        self.index = index
        #: Hostname inside the host (``h1``...), also its mDNS name ``h1.local``.
        self.name = f"h{index}"
        #: The host's IPv4 address on the LAN, as a string.
        self.address = address
        self.prefix_len = prefix_len
        #: Name of the host's network namespace.
        self.netns = f"{lan.prefix}-h{index}"
        #: The host's interface on the LAN (inside its namespace).
        self.interface = f"{lan.prefix}-v{index}"
        #: The bridge side of the host's veth pair (inside the bridge namespace).
        self.bridge_port = f"{lan.prefix}-p{index}"
        self.dir = os.path.join(lan.dir, self.name)
        self.dbus_dir = os.path.join(self.dir, "dbus")
        self.avahi_dir = os.path.join(self.dir, "avahi")
        self.avahi_conf = os.path.join(self.dir, "avahi-daemon.conf")

    def __repr__(self) -> str:
        return f"Host({self.name}, {self.address}, netns={self.netns})"

    # Running commands -----------------------------------------------------------------------

    def command(self, argv: Sequence[str]) -> list[str]:
        """Returns the argv that runs ``argv`` on this host: in its network namespace, in a
        private mount namespace where /run/dbus and /run/avahi-daemon are the host's own, and in
        a private UTS namespace carrying the host's name."""
        setup = (
            f"hostname {shlex.quote(self.name)}"
            f" && mount --bind {shlex.quote(self.dbus_dir)} /run/dbus"
            f" && mount --bind {shlex.quote(self.avahi_dir)} /run/avahi-daemon"
            ' && exec "$@"'
        )
        return ["ip", "netns", "exec", self.netns, "unshare", "-m", "-u",
                "sh", "-c", setup, self.name, *argv]

    def popen(self, argv: Sequence[str], env: dict | None = None, **kw) -> subprocess.Popen:
        """Starts ``argv`` on this host and returns its process (the pid is the command itself,
        so signals sent to it reach the command). The LAN kills it on teardown."""
        process = subprocess.Popen(self.command(argv), env=env, **kw)
        self.lan._processes.append(process)
        return process

    def run(self, argv: Sequence[str], timeout: float = 30, check: bool = True,
            env: dict | None = None, input: str | None = None) -> subprocess.CompletedProcess:
        """Runs ``argv`` on this host to completion and returns its result with text output.
        With ``check``, a non-zero exit raises LanError carrying the command's stderr."""
        result = subprocess.run(self.command(argv), capture_output=True, text=True,
                                timeout=timeout, env=env, input=input)
        if check and result.returncode != 0:
            raise LanError(f"{self.name}: {' '.join(argv)} exited {result.returncode}: "
                           f"{result.stderr.strip()}{result.stdout.strip()}")
        return result

    def python(self, script: str, *args: str, timeout: float = 30,
               check: bool = True) -> subprocess.CompletedProcess:
        """Runs one of the peer scripts next to this file with ``PYTHON`` on this host."""
        return self.run([PYTHON, os.path.join(HERE, script), *args], timeout=timeout, check=check)

    # Avahi ----------------------------------------------------------------------------------

    def start_dbus(self) -> None:
        """Starts the host's D-Bus system bus (returns once it accepts connections)."""
        self.run(["dbus-daemon", "--system", "--fork", "--nopidfile"], timeout=15)

    def start_avahi(self, timeout: float = 20) -> None:
        """Starts the host's avahi-daemon on its veth only and waits until it is running
        (its D-Bus name answers and its host name is established)."""
        self.run(["avahi-daemon", "-D", "-f", self.avahi_conf, "--no-chroot", "--no-drop-root"],
                 timeout=15)
        self.wait_avahi_running(timeout)

    def avahi_state(self) -> int | None:
        """Returns avahi-daemon's server state over D-Bus (2 = running), or None when the
        daemon does not answer."""
        result = self.run(["dbus-send", "--system", "--print-reply", "--reply-timeout=2000",
                           "--dest=org.freedesktop.Avahi", "/",
                           "org.freedesktop.Avahi.Server.GetState"], timeout=10, check=False)
        if result.returncode != 0:
            return None
        for token in result.stdout.split():
            if token.lstrip("-").isdigit():
                return int(token)
        return None

    def avahi_running(self) -> bool:
        """True when this host's avahi-daemon is running (pid file check)."""
        return self.run(["avahi-daemon", "--check"], timeout=10, check=False).returncode == 0

    def wait_avahi_running(self, timeout: float = 20) -> None:
        """Waits until the host's avahi-daemon reports AVAHI_SERVER_RUNNING over D-Bus."""
        try:
            wait_until(lambda: self.avahi_state() == 2, timeout, interval=0.2,
                       what=f"avahi-daemon on {self.name} to be running")
        except LanError as error:
            log = self.run(["sh", "-c", "cat /run/avahi-daemon/*.log 2>/dev/null; true"],
                           check=False).stdout
            raise LanError(f"{error} (avahi-daemon --check: "
                           f"{'running' if self.avahi_running() else 'not running'}) {log}") from None

    def stop_avahi(self, timeout: float = 10) -> None:
        """Stops the host's avahi-daemon (SIGTERM, it sends goodbye packets) and waits until it
        is gone."""
        self.run(["avahi-daemon", "--kill"], timeout=10, check=False)
        wait_until(lambda: not self.avahi_running(), timeout, interval=0.1,
                   what=f"avahi-daemon on {self.name} to exit")

    def kill_avahi(self, timeout: float = 10) -> None:
        """Kills the host's avahi-daemon with SIGKILL (no goodbye packets) and waits until it is
        gone."""
        pid = self.run(["cat", "/run/avahi-daemon/pid"], check=False).stdout.strip()
        if pid.isdigit():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.run(["rm", "-f", "/run/avahi-daemon/pid"], check=False)
        wait_until(lambda: self.avahi_state() is None, timeout, interval=0.1,
                   what=f"avahi-daemon on {self.name} to disappear from D-Bus")

    # Network faults -------------------------------------------------------------------------

    def link_down(self) -> None:
        """Takes the host's LAN interface down (a cable pulled)."""
        _ip("-n", self.netns, "link", "set", self.interface, "down")

    def link_up(self) -> None:
        """Brings the host's LAN interface back up."""
        _ip("-n", self.netns, "link", "set", self.interface, "up")

    # More addresses -------------------------------------------------------------------------

    def add_addresses(self, count: int, first: int = 100) -> list[str]:
        """Gives the host ``count`` more addresses on the LAN (``.first`` onwards of the /24, far
        from the hosts' own), for tests that need many source addresses (a flood from many
        guests); returns them. They go with the namespace on teardown."""
        if count < 1 or first < self.lan.count + 1 or first + count > 255:
            raise ValueError(f"cannot add {count} addresses from .{first} on a LAN of {self.lan.count} hosts")
        base = self.address.rsplit(".", 1)[0]
        added = [f"{base}.{n}" for n in range(first, first + count)]
        for address in added:
            _ip("-n", self.netns, "addr", "add", f"{address}/32", "dev", self.interface)
        return added


class Lan:
    """A bridge and ``hosts`` hosts, each with a running D-Bus system bus and avahi-daemon.

    Use as a context manager; ``down()`` is idempotent and always removes everything."""

    _live: "list[Lan]" = []
    _live_lock = threading.Lock()
    _handlers_installed = False

    def __init__(self, hosts: int, prefix: str | None = None, subnet: str | None = None):
        if hosts < 1 or hosts > 200:
            raise ValueError("hosts must be between 1 and 200")
        #: Unique prefix of every namespace and interface name of this LAN (``os`` + 4 hex).
        self.prefix = prefix or "os" + secrets.token_hex(2)
        if len(self.prefix) + len("-p") + len(str(hosts)) > 15:
            raise ValueError(f"prefix {self.prefix!r} too long for 15-character interface names")
        if subnet is None:
            subnet = f"10.231.{secrets.randbelow(250) + 1}.0/24"
        network, prefix_len = subnet.split("/")
        octets = network.split(".")
        if len(octets) != 4 or prefix_len != "24":
            raise ValueError("subnet must be an IPv4 /24 such as 10.231.7.0/24")
        self.subnet = subnet
        self.count = hosts
        self.bridge_netns = f"{self.prefix}-lan"
        self.bridge = f"{self.prefix}-br"
        self.dir = ""
        #: The hosts, ``h1`` first.
        self.hosts: list[Host] = []
        self._base = ".".join(octets[:3])
        self._processes: list[subprocess.Popen] = []
        self._netns_created: list[str] = []
        self._is_up = False

    def __enter__(self) -> "Lan":
        self.up()
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def __repr__(self) -> str:
        return f"Lan({self.prefix}, {self.subnet}, hosts={[h.name for h in self.hosts]})"

    # Bring-up -------------------------------------------------------------------------------

    def up(self) -> "Lan":
        """Builds the LAN and starts every host's D-Bus and avahi-daemon; on any failure,
        tears down what was built and raises LanError."""
        missing = missing_prerequisites()
        if missing:
            raise LanError("cannot build a LAN: " + "; ".join(missing))
        Lan._register(self)
        self._is_up = True
        try:
            self._build()
        except BaseException:
            self.down()
            raise
        return self

    def _build(self) -> None:
        # The bind-mount targets must exist in the shared file system.
        os.makedirs("/run/dbus", exist_ok=True)
        os.makedirs("/run/avahi-daemon", exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix=f"ordersync-lan-{self.prefix}-")
        os.chmod(self.dir, 0o755)

        self._add_netns(self.bridge_netns)
        _ip("-n", self.bridge_netns, "link", "add", self.bridge, "type", "bridge")
        _ip("-n", self.bridge_netns, "link", "set", self.bridge, "up")
        for index in range(1, self.count + 1):
            host = Host(self, index, f"{self._base}.{index}", 24)
            self.hosts.append(host)
            for folder in (host.dbus_dir, host.avahi_dir):
                os.makedirs(folder, mode=0o755)
            with open(host.avahi_conf, "w") as conf:
                conf.write(_AVAHI_CONF.format(interface=host.interface))
            self._add_netns(host.netns)
            self._disable_ipv6(host.netns)
            _ip("link", "add", host.interface, "type", "veth", "peer", "name", host.bridge_port)
            _ip("link", "set", host.interface, "netns", host.netns)
            _ip("link", "set", host.bridge_port, "netns", self.bridge_netns)
            _ip("-n", self.bridge_netns, "link", "set", host.bridge_port, "master", self.bridge)
            _ip("-n", self.bridge_netns, "link", "set", host.bridge_port, "up")
            _ip("-n", host.netns, "link", "set", "lo", "up")
            _ip("-n", host.netns, "addr", "add", f"{host.address}/24", "dev", host.interface)
            _ip("-n", host.netns, "link", "set", host.interface, "up")
        for host in self.hosts:
            host.start_dbus()
        for host in self.hosts:
            host.run(["avahi-daemon", "-D", "-f", host.avahi_conf, "--no-chroot",
                      "--no-drop-root"], timeout=15)
        for host in self.hosts:
            host.wait_avahi_running()

    @staticmethod
    def _disable_ipv6(netns: str) -> None:
        # The simulated LAN is IPv4 only: no link-local IPv6 addresses to be resolved to.
        for scope in ("default", "all"):
            subprocess.run(["ip", "netns", "exec", netns, "sh", "-c",
                            f"echo 1 > /proc/sys/net/ipv6/conf/{scope}/disable_ipv6"],
                           capture_output=True)

    def _add_netns(self, name: str) -> None:
        _ip("netns", "add", name)
        self._netns_created.append(name)

    # Teardown -------------------------------------------------------------------------------

    def down(self) -> None:
        """Kills every process running in this LAN's namespaces, deletes the namespaces and
        the temporary folder. Safe to call more than once and after a partial bring-up."""
        if not self._is_up:
            return
        self._is_up = False
        namespaces = list(self._netns_created)
        for signum, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
            pids = self._pids(namespaces)
            for pid in pids:
                try:
                    os.kill(pid, signum)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + grace
            while pids and time.monotonic() < deadline:
                self._reap()
                pids = self._pids(namespaces)
                if pids:
                    time.sleep(0.05)
            if not pids:
                break
        self._reap(block=True)
        for name in reversed(namespaces):
            _ip("netns", "del", name, check=False)
        for host in self.hosts:
            # A veth created in the root namespace but not yet moved (failed bring-up).
            if os.path.exists(f"/sys/class/net/{host.interface}"):
                _ip("link", "del", host.interface, check=False)
        self._netns_created.clear()
        if self.dir and not os.environ.get("ORDERSYNC_KEEP_LAN"):
            shutil.rmtree(self.dir, ignore_errors=True)
        Lan._unregister(self)

    @staticmethod
    def _pids(namespaces: list[str]) -> list[int]:
        pids = []
        for name in namespaces:
            result = _ip("netns", "pids", name, check=False)
            pids.extend(int(p) for p in result.stdout.split() if p.isdigit())
        return [pid for pid in pids if pid != os.getpid()]

    def _reap(self, block: bool = False) -> None:
        for process in self._processes:
            if process.returncode is None:
                try:
                    process.wait(timeout=2 if block else 0)
                except subprocess.TimeoutExpired:
                    if block:
                        process.kill()
                        process.wait()
        if block:
            self._processes.clear()

    # Process-wide cleanup -------------------------------------------------------------------

    @classmethod
    def _register(cls, lan: "Lan") -> None:
        with cls._live_lock:
            cls._live.append(lan)
            if not cls._handlers_installed:
                cls._handlers_installed = True
                atexit.register(cls._down_all)
                if threading.current_thread() is threading.main_thread():
                    for signum in (signal.SIGTERM, signal.SIGHUP):
                        if signal.getsignal(signum) in (signal.SIG_DFL, None):
                            signal.signal(signum, cls._on_signal)

    @classmethod
    def _unregister(cls, lan: "Lan") -> None:
        with cls._live_lock:
            if lan in cls._live:
                cls._live.remove(lan)

    @classmethod
    def _down_all(cls) -> None:
        for lan in list(cls._live):
            lan.down()

    @classmethod
    def _on_signal(cls, signum, frame) -> None:
        cls._down_all()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
