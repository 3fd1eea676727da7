"""`ordersync rollup` to head office over TLS with the server's certificate checked (issue 28,
Docs/OPERATIONS.md "Head office roll-up (PostgreSQL)"): head office's PostgreSQL on a simulated
host of its own speaks TLS with a certificate for `headoffice.example` signed by a lab CA made
here with openssl, and lets the LAN in over TLS only (`hostssl`, as the guide asks).

* `sslmode=verify-full` with the lab CA in `sslrootcert`: `--once` exits 0, head office holds the
  journal, `verify` exits 0 (and plain TCP is refused, so the run went over TLS);
* another CA in `sslrootcert`: `--once` exits 78 (configuration) naming the failed check;
* the right CA but another host name in the URL: exit 78 naming the names that differ;
* `verify` with the wrong CA: exit 78 too.

Real processes: the shop's master, `ordersync rollup`, PostgreSQL 15, openssl."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from failover_lab import store
from lan_support import require
from postgres_lab import HeadOffice, check_equals_journal, require_postgres
from rollup_lab import EXIT_CONFIG, EXIT_OK, once, rollup_available, verify

pytestmark = pytest.mark.usefixtures("ordersync_built")

#: The name head office's certificate carries; the shop reaches it by `hostaddr` (no DNS here).
NAME = "headoffice.example"


@pytest.fixture
def rollup_built(ordersync_built):
    require(rollup_available(), "this ordersync binary has no `rollup` command (issue 28's product)")
    require_postgres()
    require(shutil.which("openssl") is not None, "openssl is needed to make the lab CA (apt: openssl)")


def openssl(*args: str, cwd: str) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def lab_ca(folder: str, name: str) -> str:
    """A CA (EC P-256) in `folder/name.pem` with its key; returns the certificate's path."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj", f"/CN=OrderSync {name}",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)
    os.chmod(os.path.join(folder, f"{name}.pem"), 0o644)
    return os.path.join(folder, f"{name}.pem")


def server_certificate(folder: str, ca: str, host_name: str) -> tuple[str, str]:
    """A server certificate for `host_name` (subjectAltName DNS) signed by `ca`: (cert, key)."""
    with open(os.path.join(folder, "server.ext"), "w") as ext:
        ext.write(f"subjectAltName=DNS:{host_name}\nextendedKeyUsage=serverAuth\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "server.key",
            "-out", "server.csr", "-subj", f"/CN={host_name}", cwd=folder)
    openssl("x509", "-req", "-in", "server.csr", "-CA", ca, "-CAkey", ca[:-len(".pem")] + ".key", "-CAcreateserial",
            "-out", "server.crt", "-days", "2", "-extfile", "server.ext", cwd=folder)
    return os.path.join(folder, "server.crt"), os.path.join(folder, "server.key")


def test_verify_full_ships_and_a_wrong_ca_or_host_name_is_refused_with_exit_78(make_lan, rollup_built):
    lan = make_lan(2)
    pki = os.path.join(lan.hosts[-1].dir, "pki")
    os.makedirs(pki)
    ca = lab_ca(pki, "lab-ca")
    other_ca = lab_ca(pki, "other-ca")
    office = HeadOffice(lan.hosts[-1], tls=server_certificate(pki, ca, NAME)).start()
    office.add_shop("role_shopT", "shopT")
    master, _ = store(lan, "shopT", port=17291, slaves=0)
    master.wait_api()
    for customer in ("Ada", "Grace", "Edsger"):
        master.create(customer)
    seq = master.status()["seq"]
    assert seq >= 3, seq

    def url(name: str = NAME, root: str = ca, mode: str = "verify-full") -> str:
        return office.url("role_shopT", address=name, hostaddr=office.host.address, sslmode=mode, sslrootcert=root)

    # Plain TCP is refused (hostssl only): whatever ships below went over TLS.
    code, answer, _ = once(master, url(mode="disable"), timeout=120)
    assert code != EXIT_OK and "no encryption" in answer["lastError"]["message"], (code, answer)

    code, answer, _ = once(master, url(root=other_ca), timeout=120)
    assert code == EXIT_CONFIG, (code, answer)
    assert answer["lastError"]["code"] == "config", answer
    assert "certificate verify failed" in answer["lastError"]["message"], answer
    assert office.checkpoints("shopT") == [], "nothing may ship to a server whose certificate failed the check"

    code, answer, _ = once(master, url(name="wrong.example"), timeout=120)
    assert code == EXIT_CONFIG, (code, answer)
    message = answer["lastError"]["message"]
    assert NAME in message and "wrong.example" in message and "does not match host name" in message, answer

    code, answer, _ = once(master, url(), timeout=120)
    assert code == EXIT_OK, (code, answer)
    assert answer["checkpoint"]["seq"] == seq and answer["lastError"] is None, answer
    check_equals_journal(office, "shopT", master.data_dir)
    code, proof = verify(master, url())
    assert code == EXIT_OK and proof["equal"] is True and proof["seq"] == seq, (code, proof)

    code, refused = verify(master, url(root=other_ca))
    assert code == EXIT_CONFIG and "certificate verify failed" in refused["error"], (code, refused)
