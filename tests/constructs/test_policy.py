"""cdk-nag wiring: an unacknowledged AwsSolutions finding fails synthesis; an acknowledged one
with a reason does not."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns

from fm_constructs.policy import acknowledge
from tests.support import synth_stack


def test_unacknowledged_finding_fails_synthesis() -> None:
    with pytest.raises(RuntimeError, match="AwsSolutions-SNS3"):
        synth_stack(lambda stack: sns.Topic(stack, "Plain"))


def test_acknowledged_finding_passes() -> None:
    def build(stack: cdk.Stack) -> None:
        topic = sns.Topic(stack, "Plain")
        acknowledge(topic, "AwsSolutions-SNS3", "test topic without publishers")

    synth_stack(build).resource_count_is("AWS::SNS::Topic", 1)


def test_acknowledgement_needs_a_reason() -> None:
    with pytest.raises(ValueError, match="needs a reason"):
        synth_stack(lambda stack: acknowledge(sns.Topic(stack, "T"), "AwsSolutions-SNS3", " "))
