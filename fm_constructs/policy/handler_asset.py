"""The code package of one of this library's custom-resource handlers.

A package holds the handler's ``handler.py``, the shared :mod:`fm_constructs.policy.cfn_response`
beside it (the handler imports it as the top-level ``cfn_response``, as Lambda puts the package
root on the import path) and any data files the handler reads.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

CFN_RESPONSE_MODULE = Path(__file__).parent / "cfn_response.py"


def stage_handler_asset(
    name: str, handler: Path, data_files: Sequence[tuple[Path, Path]] = ()
) -> Path:
    """A directory holding ``handler.py``, ``cfn_response.py`` and ``data_files`` (each a
    path inside the package and its source).

    The directory is named by ``name`` and a hash of its contents under the system temporary
    directory, so repeated synths reuse one directory per content instead of leaving a new
    copy behind each time; it is built beside its final name and renamed into place, so
    concurrent synths never see a half-written directory.
    """
    sources = [
        (Path("handler.py"), handler),
        (Path("cfn_response.py"), CFN_RESPONSE_MODULE),
        *data_files,
    ]
    digest = hashlib.sha256()
    for relative, source in sources:
        digest.update(str(relative).encode() + b"\0" + source.read_bytes() + b"\0")
    staging = Path(tempfile.gettempdir()) / f"fm-{name}-{digest.hexdigest()[:32]}"
    if staging.is_dir():
        return staging
    building = Path(tempfile.mkdtemp(prefix=f"{staging.name}.", dir=staging.parent))
    for relative, source in sources:
        (building / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, building / relative)
    try:
        building.rename(staging)
    except OSError:  # another synth renamed the same contents into place first
        shutil.rmtree(building, ignore_errors=True)
    return staging
