#!/usr/bin/env bash
# Installs everything OrderSync needs on Debian (run as root): system packages, a Python venv
# with the independent test peers, and a build of the project.
#   Scripts/setup.sh            install + debug build
#   Scripts/setup.sh --no-build install only
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(avahi-daemon avahi-utils libavahi-client-dev libsqlite3-dev sqlite3 dbus iproute2 iptables
              python3-venv python3-pip procps psmisc util-linux curl gcc valgrind prometheus)
# Scripts/package-deb.sh (dpkg-shlibdeps, strip) and its test (systemd-analyze verify, the postinst's adduser)
APT_PACKAGES+=(dpkg-dev binutils systemd adduser)
# Tests/package/test_package.py: lintian checks the package (changelog, copyright, stripped binary)
APT_PACKAGES+=(lintian)
# The dashboard's TLS (Sources/Shell/COpenSSL), and `openssl x509` in Tests/lan/test_http_listeners.py
APT_PACKAGES+=(libssl-dev openssl)
# Tests/dashboard: the page in headless Chromium, driven over the DevTools protocol
APT_PACKAGES+=(chromium)
# Scripts/lint.sh: the dashboard's script, page and stylesheet (eslint, HTML Tidy, tinycss2)
APT_PACKAGES+=(eslint tidy python3-tinycss2)
# Tests/lan/test_export.py: a real spreadsheet (LibreOffice Calc, headless) opens the CSV export
APT_PACKAGES+=(libreoffice-calc-nogui)
# Tests/lan/test_power_cut.py: powercut_fs, a FUSE layer compiled at run time, loses unsynced writes
APT_PACKAGES+=(fuse3 libfuse3-dev pkg-config)
# `ordersync rollup` links libpq (Sources/Shell/CLibPQ); Tests/lan/postgres_lab.py starts head office's
# PostgreSQL (initdb, pg_ctl, psql) on a simulated host of its own
APT_PACKAGES+=(libpq-dev postgresql postgresql-client)
PY_PACKAGES=(websockets==17.4 zeroconf kosoku pytest noiseprotocol segno matplotlib schemathesis)

if [ "$(id -u)" != 0 ]; then
    echo "setup: run as root (it installs packages and the tests create network namespaces)" >&2
    exit 1
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
    echo "setup: the Swift toolchain (swift 6.x) is not on PATH; install it from swift.org first" >&2
    exit 1
fi

if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    python3 -m venv .venv
fi
if ! .venv/bin/python -c "import websockets, zeroconf, pytest, noise.connection, segno, matplotlib, schemathesis" 2>/dev/null || ! [ -x .venv/bin/kosoku ]; then
    echo "setup: installing ${PY_PACKAGES[*]} into .venv"
    .venv/bin/pip install -q --disable-pip-version-check "${PY_PACKAGES[@]}"
fi

if [ "${1:-}" != "--no-build" ]; then
    echo "setup: building"
    swift build 2>&1 | tail -n 3
fi
