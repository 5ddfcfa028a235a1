"""The git tree id of a set of files, computed from git's object format alone (no git).

The node scripts check a source archive by the tree it holds (``source_tree`` in the node
scripts' ``lib.sh``, with the host's git); this is the independent account of the same id the
tests pin for the archives they serve. The format, at git's documentation of its objects
(``Documentation/gitformat-loose.txt``, "Object format"; ``tree.c`` for the order): a blob is
``blob <size>\\0<content>``; a tree lists ``<mode> <name>\\0<20-byte id>`` per entry, sorted by
name with a directory's name compared as if it ended in ``/``; each id is the SHA-1 of the
object.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

#: The modes git records for a file (by its executable bit) and a directory.
_FILE_MODES = {False: b"100644", True: b"100755"}
_TREE_MODE = b"40000"

#: A directory: name -> a subdirectory, or a file's (mode, object id).
Folder = dict[str, "Folder | tuple[bytes, bytes]"]


def _object_id(kind: bytes, body: bytes) -> bytes:
    return hashlib.sha1(kind + b" " + str(len(body)).encode() + b"\0" + body).digest()


def _tree(folder: Folder) -> bytes:
    rows: list[tuple[bytes, bytes, bytes]] = []
    for name, entry in folder.items():
        if isinstance(entry, dict):
            rows.append((name.encode() + b"/", _TREE_MODE, _tree(entry)))
        else:
            rows.append((name.encode(), *entry))
    body = b"".join(
        mode + b" " + key.removesuffix(b"/") + b"\0" + object_id
        for key, mode, object_id in sorted(rows)
    )
    return _object_id(b"tree", body)


def tree_id(files: Mapping[str, tuple[bytes, bool]]) -> str:
    """The tree id of ``files``: path (``/``-separated, below the tree's top) -> (content,
    whether it is executable)."""
    root: Folder = {}
    for path, (content, executable) in files.items():
        *parents, name = path.split("/")
        folder = root
        for parent in parents:
            child = folder.setdefault(parent, {})
            assert isinstance(child, dict), f"{path}: {parent} is a file"
            folder = child
        folder[name] = (_FILE_MODES[executable], _object_id(b"blob", content))
    return _tree(root).hex()
