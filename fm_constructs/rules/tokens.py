"""Whether a value is a CDK token (known only at deploy time), without importing aws_cdk.

A check skips a token: its value does not exist at synthesis. The encodings are those of
aws-cdk-lib 2.x (``core/lib/private/encoding.ts``): a string token is ``${Token[NAME.N]}``
inside the string, a list token is a one-element list of ``#{Token[NAME.N]}``, a number token
is a double whose upper 16 bits are 0xFBFF, and any other token is an object with ``resolve``.
"""

from __future__ import annotations

import struct

#: The upper 16 bits of a double that encodes a number token (DOUBLE_TOKEN_MARKER_BITS).
_NUMBER_MARKER = 0xFBFF


def is_unresolved(value: object) -> bool:
    """True when ``value`` is (or, for a string, contains) a CDK token."""
    if isinstance(value, str):
        return "${Token[" in value
    if isinstance(value, float):
        bits: int = struct.unpack("<Q", struct.pack("<d", value))[0]
        return bits >> 48 == _NUMBER_MARKER
    if isinstance(value, list | tuple):
        return len(value) == 1 and isinstance(value[0], str) and value[0].startswith("#{Token[")
    return callable(getattr(value, "resolve", None))
