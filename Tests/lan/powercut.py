"""A filesystem that loses what was not synced, for real processes: `powercut_fs.c` and
`powercut_log.c` (a FUSE passthrough; the header of powercut_fs.c says what it models),
compiled with gcc at run time and mounted over a backing folder::

    with PowerCutMount(tmp_path / "disk") as disk:       # disk.path is the mount point
        ...                                             # run a process with its files there
        process.kill(); disk.wait_closed()              # SIGKILL, then no file of it left open
        dropped = disk.cut("drop", seed=7)              # the power goes: unsynced writes undone

`missing_prerequisites()` names what this machine lacks (/dev/fuse, fusermount3, gcc, the fuse3
headers); the tests skip on it, or fail under CI=true.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from lanharness import LanError, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = [os.path.join(HERE, name) for name in ("powercut_fs.c", "powercut_log.c")]
_built: dict[str, str] = {}


def missing_prerequisites() -> list[str]:
    """What a PowerCutMount needs and this machine lacks (empty when it can run)."""
    missing = []
    if not os.path.exists("/dev/fuse"):
        missing.append("/dev/fuse (the kernel's FUSE device)")
    for tool in ("fusermount3", "gcc", "pkg-config"):
        if shutil.which(tool) is None:
            missing.append(f"{tool} (apt: {'fuse3' if tool == 'fusermount3' else tool})")
    if shutil.which("pkg-config") and subprocess.run(["pkg-config", "--exists", "fuse3"]).returncode != 0:
        missing.append("the fuse3 headers (apt: libfuse3-dev)")
    if os.geteuid() != 0:
        missing.append("root (to mount)")
    return missing


def build() -> str:
    """Compiles powercut_fs.c and powercut_log.c once per test process; returns the binary's path."""
    if "binary" not in _built:
        out = os.path.join(tempfile.mkdtemp(prefix="powercut-"), "powercut_fs")
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True, text=True,
                               check=True).stdout.split()
        result = subprocess.run(["gcc", "-O1", "-Wall", "-Werror", "-o", out, *SOURCES, *flags], capture_output=True,
                                text=True)
        if result.returncode != 0:
            raise LanError(f"gcc could not build powercut_fs: {result.stderr}")
        _built["binary"] = out
    return _built["binary"]


class PowerCutMount:
    """One powercut_fs mount: `path` is the mount point, over `<folder>/backing`."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = str(folder)
        self.path = os.path.join(self.folder, "mnt")
        self.backing = os.path.join(self.folder, "backing")
        self.trash = os.path.join(self.folder, "trash")
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "PowerCutMount":
        return self.mount()

    def __exit__(self, *exc) -> None:
        self.unmount()

    def mount(self) -> "PowerCutMount":
        for d in (self.path, self.backing, self.trash):
            os.makedirs(d, exist_ok=True)
        self.log_path = os.path.join(self.folder, "powercut_fs.log")
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen([build(), self.backing, self.trash, self.path], stdout=log, stderr=log)

        def mounted():
            if self.process.poll() is not None:
                with open(self.log_path, errors="replace") as f:
                    raise LanError(f"powercut_fs exited {self.process.returncode}: {f.read()[-2000:]}")
            return os.path.exists(self.control)
        wait_until(mounted, 10, interval=0.02, what=f"powercut_fs mounted on {self.path}")
        return self

    @property
    def control(self) -> str:
        return os.path.join(self.path, ".powercut")

    def unmount(self) -> None:
        """Lazily unmounts (processes of other mount namespaces may still hold a copy) and ends
        the filesystem process."""
        if self.process is None:
            return
        subprocess.run(["fusermount3", "-u", "-z", self.path], capture_output=True)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def status(self) -> dict[str, int]:
        """The filesystem's counters: `killed_pid`, `kill_countdown`, `open`, `unsynced_bytes`,
        `unsynced_files`, `unsynced_names`, `cuts`, `dropped_bytes`, `dropped_files`, `dropped_names`."""
        with open(self.control) as f:
            rows = [line.split() for line in f.read().splitlines()]
        return {fields[0]: int(fields[1]) for fields in rows if fields[0] != "inode"}

    def unsynced_files(self) -> dict[str, int]:
        """The files holding unsynced writes, by their path in the mount: how many bytes each."""
        with open(self.control) as f:
            by_inode = {int(fields[1]): int(fields[2]) for fields in (line.split() for line in f.read().splitlines())
                        if fields[0] == "inode"}
        out = {}
        for folder, _, names in os.walk(self.backing):
            for name in names:
                path = os.path.join(folder, name)
                inode = os.lstat(path).st_ino
                if inode in by_inode:
                    out[os.path.relpath(path, self.backing)] = by_inode.pop(inode)
        return {**out, **{f"(inode {inode}, no name)": count for inode, count in by_inode.items()}}

    def wait_closed(self, timeout: float = 10) -> None:
        """Waits until no file or directory of the mount is open (the kernel releases a killed
        process's files a moment after it is reaped)."""
        wait_until(lambda: self.status()["open"] == 0, timeout, interval=0.02, what="every file of the mount closed")

    def command(self, text: str) -> None:
        """Writes one command to the control file (`cut MODE SEED`, `kill-at-fsync N`,
        `fsync ignore|honour`)."""
        fd = os.open(self.control, os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)

    def kill_at_fsync(self, count: int) -> None:
        """Arms the filesystem: the process making the `count`th fsync from now on is SIGKILLed
        inside that call, before it is done (`status()["killed_pid"]` names it)."""
        self.command(f"kill-at-fsync {count}\n")

    def cut(self, mode: str = "drop", seed: int = 0) -> dict[str, int]:
        """The power cut: every write, truncation and name change not synced is undone (`drop`)
        or torn sector by sector (`tear`, by `seed`). Returns what this cut dropped (bytes,
        files, names). Refused (OSError EBUSY) while a file of the mount is open."""
        before = self.status()
        self.command(f"cut {mode} {seed}\n")
        after = self.status()
        return {key: after[f"dropped_{key}"] - before[f"dropped_{key}"] for key in ("bytes", "files", "names")}
