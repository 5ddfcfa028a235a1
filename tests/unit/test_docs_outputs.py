"""The stack outputs the docs tell a user to read exist, in the stack the docs name: checked
against the committed per-stack snapshots of the shipped profiles (no synthesis here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = ROOT / "tests" / "stacks" / "__snapshots__" / "test_profiles"
_SNAPSHOT = re.compile(r"test_stack_matches_snapshot\[(?P<profile>[\w-]+)__(?P<stack>[\w-]+)\]")
_QUERY = re.compile(r"--stack-name (fm-[\w-]+)[^\n]*\n?[^\n]*OutputKey=='(\w+)'")
_BACKTICKED = re.compile(r"`([A-Z][a-z]+(?:[A-Z][a-z0-9]*)+)`")


def _outputs() -> dict[str, set[str]]:
    """Output names of every stack of every shipped profile (by stack name: each profile's
    stacks carry its own prefix), and of all of them together under the key ``*``."""
    found: dict[str, set[str]] = {"*": set()}
    for path in SNAPSHOTS.glob("*.json"):
        match = _SNAPSHOT.match(path.stem)
        assert match, path
        names = {
            k
            for k in json.loads(path.read_text()).get("Outputs", {})
            if not k.startswith("Exports")
        }
        found["*"] |= names
        found.setdefault(match["stack"], set()).update(names)
    return found


OUTPUTS = _outputs()


def test_snapshots_are_there() -> None:
    assert "KubeconfigCommand" in OUTPUTS["fm-cluster"]


def test_every_output_query_names_the_stack_that_has_it() -> None:
    queries = [
        (path, stack, key)
        for path in ROOT.joinpath("docs").rglob("*.md")
        for stack, key in _QUERY.findall(path.read_text(encoding="utf-8"))
    ]
    assert queries, "the scan finds the describe-stacks queries"
    wrong = [
        f"{path.relative_to(ROOT)}: {stack} has no output {key}"
        for path, stack, key in queries
        if key not in OUTPUTS.get(stack, set())
    ]
    assert not wrong, wrong


def test_the_outputs_getting_started_lists_exist() -> None:
    text = ROOT.joinpath("docs", "getting-started.md").read_text(encoding="utf-8")
    section = text.split("### What to check after each stack", 1)[1].split("\n## ", 1)[0]
    sentences = re.split(r"\.\s", section.replace("\n", " "))
    named = {
        token
        for sentence in sentences
        if "output" in sentence.lower()
        for token in _BACKTICKED.findall(sentence)
    }
    assert {"EksClusterName", "KubeconfigCommand", "GrafanaUrl"} <= named
    missing = sorted(named - OUTPUTS["*"])
    assert not missing, f"docs/getting-started.md names outputs no stack has: {missing}"
