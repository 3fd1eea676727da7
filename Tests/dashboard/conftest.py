"""pytest fixtures for the dashboard tests (see README.md here).

They reuse the simulated-LAN harness of Tests/lan; when a prerequisite is missing (not root,
no avahi-daemon, no chromium...), tests are skipped with the reason, except under CI mode
where they fail.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
for folder in (os.path.join(TESTS, "lan"), os.path.join(TESTS, "support"), HERE):
    if folder not in sys.path:
        sys.path.insert(0, folder)
