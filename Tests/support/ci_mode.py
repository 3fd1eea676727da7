"""CI mode for every Python test folder: one definition, used by the skip-or-fail helpers and by
the hook in Tests/conftest.py that fails the run on any skip.

CI mode is on when `CI` holds anything but nothing, `false` or `0` (any case): runners set
`CI=true`, `CI=1` or `CI=yes`, and each must mean the same thing. Under CI mode a missing
prerequisite is a failure, never a skip.
"""

from __future__ import annotations

import os

#: The values of `CI` that leave CI mode off.
OFF_VALUES = ("", "false", "0")


def in_ci(environ=None) -> bool:
    """True when `CI` (in `environ`, by default the process environment) turns CI mode on."""
    value = (os.environ if environ is None else environ).get("CI", "")
    return value.strip().lower() not in OFF_VALUES
