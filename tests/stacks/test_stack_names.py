"""``fmc status``/``teardown`` name the stacks without aws_cdk; the names must be the ones
``build_stacks`` gives (every shipped profile: the stacks of the profile's shared synthesis,
which ``build_stacks`` built, so no second build of the app)."""

from __future__ import annotations

import pytest

from fm_constructs.cli.deployment import stack_names
from tests.stacks.profiles import profile_params, synthesize


@pytest.mark.parametrize("profile", profile_params())
def test_stack_names_are_the_apps(profile: str) -> None:
    result = synthesize(profile)
    built = result.stacks
    names = stack_names(result.profile)
    assert sorted(names.all) == sorted(s.stack_name for s in built.all)
    assert names.platform == built.platform.stack_name
    assert sorted(names.computes) == sorted(s.stack_name for s in built.computes.values())
