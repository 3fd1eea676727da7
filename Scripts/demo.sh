#!/usr/bin/env bash
# Sets everything up (as root, on Debian) and runs the demo store on a simulated LAN.
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/setup.sh
export ORDERSYNC_BIN="$PWD/.build/debug/ordersync"
export ORDERSYNC_PYTHON="$PWD/.venv/bin/python"
exec .venv/bin/python Scripts/demo.py
