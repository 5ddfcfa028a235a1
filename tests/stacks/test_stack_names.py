"""``fmc status``/``teardown`` name the stacks without aws_cdk; the names must be the ones
``build_stacks`` gives (every shipped profile, stacks built, not synthesized)."""

from __future__ import annotations

import pytest

from fm_constructs.cli.deployment import stack_names
from fm_constructs.config import load_profile
from stacks.app_builder import build_stacks, create_app
from tests.stacks.profiles import PROFILE_PATHS, cdk_json_context


@pytest.mark.parametrize("path", PROFILE_PATHS, ids=lambda p: p.stem)
def test_stack_names_are_the_apps(path: object) -> None:
    profile = load_profile(path)  # type: ignore[arg-type]
    built = build_stacks(create_app(context=cdk_json_context()), profile)
    names = stack_names(profile)
    assert sorted(names.all) == sorted(s.stack_name for s in built.all)
    assert names.platform == built.platform.stack_name
    assert sorted(names.computes) == sorted(s.stack_name for s in built.computes.values())
