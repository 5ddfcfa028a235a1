"""Where ``fmc`` finds a profile when ``--config`` is not given.

Not the working directory: an installed ``fmc`` run from anywhere must find the same file.
In order: the ``FMC_CONFIG`` environment variable, then ``config/default.toml`` of the
repository the package was installed from (a clone with ``pip install -e``, as ``make setup``
does). A package installed from a wheel has no such file, and the command says to pass
``--config``.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable naming the profile every command uses without ``--config``.
CONFIG_ENV = "FMC_CONFIG"

#: The repository root when the package runs from a clone (``fm_constructs/`` sits in it).
REPOSITORY = Path(__file__).resolve().parents[2]
SHIPPED_DEFAULT = REPOSITORY / "config" / "default.toml"

#: Where your own profiles go: the tests and figures sweep only the shipped ``config/``.
USER_PROFILES = "profiles"


def default_profile() -> str | None:
    """The profile used without ``--config``: ``$FMC_CONFIG``, else the clone's default
    profile, else None (the caller asks for ``--config``)."""
    configured = os.environ.get(CONFIG_ENV)
    if configured:
        return configured
    if SHIPPED_DEFAULT.is_file():
        return str(SHIPPED_DEFAULT)
    return None


def describe_default() -> str:
    """The default, as help texts show it."""
    found = default_profile()
    shown = found if found is not None else "none found: pass --config"
    return f"${CONFIG_ENV}, else the shipped config/default.toml ({shown})"
