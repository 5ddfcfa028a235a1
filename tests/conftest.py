"""Shared fixtures. Synthesis through jsii costs seconds, so each profile is synthesized once
per test process and every stack-level test reads the cached templates."""

from __future__ import annotations

from stacks.runtime import prefer_venv_node

prefer_venv_node()
