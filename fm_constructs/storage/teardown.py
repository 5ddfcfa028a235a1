"""A VPC's deletion that stops, with what to do first, while retained file systems use it.

A retained FSx file system outlives its stack, and so does its security group; its network
interfaces stay in the subnet. The stack that owns the VPC then cannot delete the subnet or
the VPC, and CloudFormation says only that they "have dependencies", after a long wait.
:class:`VpcTeardownGuard` is a custom resource that CloudFormation deletes before the VPC and
its subnets (it refers to them). Its delete lists the FSx file systems and the foreign security
groups still in the VPC and, if there are any, fails with a reason naming each one and the
commands to delete it (handler: ``teardown_guard/handler.py``). ``cdk destroy --all`` then
stops at that stack with that message, the VPC intact; once they are gone the same command
deletes the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aws_cdk import CustomResource, Duration, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from fm_constructs.policy.handler_asset import stage_handler_asset
from fm_constructs.policy.handler_function import handler_function
from fm_constructs.policy.nag import acknowledge

HANDLER_DIRECTORY = Path(__file__).parent / "teardown_guard"
GUARD_RUNTIME = lambda_.Runtime.PYTHON_3_14
GUARD_TIMEOUT = Duration.minutes(2)


class VpcTeardownGuard(Construct):
    """Deleted before ``vpc`` and its subnets (and ``extra_subnet_ids``: subnets the VPC
    construct does not list, such as pod subnets in a secondary CIDR). Its deletion fails
    while FSx file systems or security groups from other stacks are still in the VPC, saying
    which and how to delete them. Create and update do nothing; it never deletes anything."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        extra_subnet_ids: Sequence[str] = (),
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        handler = handler_function(
            self,
            role_description="Lists what still uses the VPC before it is deleted (custom resource)",
            description="fm-constructs: stops a VPC's deletion while retained file systems use it",
            runtime=GUARD_RUNTIME,
            code=lambda_.Code.from_asset(
                str(stage_handler_asset("teardown-guard", HANDLER_DIRECTORY / "handler.py"))
            ),
            timeout=GUARD_TIMEOUT,
            memory_size=128,
            log_retention=log_retention,
        )
        self.log_group, self.role, self.function = handler.log_group, handler.role, handler.function
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="DescribeWhatUsesTheVpc",
                actions=["fsx:DescribeFileSystems", "ec2:DescribeSecurityGroups"],
                resources=["*"],
            )
        )
        acknowledge(
            self.role,
            "AwsSolutions-IAM5[Resource::*]",
            "fsx:DescribeFileSystems and ec2:DescribeSecurityGroups have no resource-level "
            "permissions; the function only reads descriptions, to name what blocks the VPC's "
            "deletion.",
        )
        subnets = [
            s.subnet_id for s in (*vpc.public_subnets, *vpc.private_subnets, *vpc.isolated_subnets)
        ]
        subnets += list(extra_subnet_ids)
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=self.function.function_arn,
            resource_type="Custom::VpcTeardownGuard",
            service_timeout=GUARD_TIMEOUT.plus(Duration.minutes(1)),
            # Referring to the VPC and every subnet makes CloudFormation delete this first.
            properties={"VpcId": vpc.vpc_id, "SubnetIds": subnets, "StackName": stack.stack_name},
        )
        # The role policy must exist when CloudFormation invokes the function, on delete too.
        self.resource.node.add_dependency(self.role)
