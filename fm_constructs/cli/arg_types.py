"""Whole-number option values of ``fmc``: one parser, so every option that takes a count says
the same thing about a bad one (argparse prints the message after the option's name)."""

from __future__ import annotations

import argparse


def whole_number(text: str, *, least: int) -> int:
    """``text`` as an int of at least ``least``, else the error argparse reports."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be {least} or more, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """A count that may be 0 (``fmc plan --pod-ips-per-node``)."""
    return whole_number(text, least=0)


def positive_int(text: str) -> int:
    """A count of at least 1 (nodes, instances, days)."""
    return whole_number(text, least=1)
