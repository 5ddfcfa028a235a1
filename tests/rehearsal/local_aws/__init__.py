"""A local AWS for the deploy rehearsal: moto's server with the extensions it needs to deploy
this project's stacks the way CloudFormation would (see each module)."""

from __future__ import annotations

from tests.rehearsal.local_aws import custom_resources, engine, service_rules


def install(endpoint: str) -> None:
    """Apply every extension to moto in this process; in-process handlers call ``endpoint``."""
    custom_resources.ENDPOINT["url"] = endpoint
    service_rules.install()
    engine.install()
