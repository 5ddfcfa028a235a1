"""Every Lambda function of a stack has reserved concurrency or a written reason why not.

The functions these stacks deploy are CloudFormation custom-resource handlers (CDK's kubectl
provider and provider framework, CDK's own custom-resource providers, bucket deployments, the
Grafana provisioner): CloudFormation invokes them a few times per deployment, never from a
request path. Reserving concurrency for them would not protect anything, and Lambda refuses a
reservation that leaves an account fewer than 10 unreserved executions, so it would make
deploys fail in new accounts at the default quota. The aspect writes that reason into each such
function's metadata (``fm:reserved-concurrency``); a function of an unknown kind gets none, and
the template test over every profile then fails until its owner sets
``reserved_concurrent_executions`` or a reason of its own.
"""

from __future__ import annotations

from typing import TypeGuard

import jsii
from aws_cdk import CfnResource, IAspect
from constructs import IConstruct

METADATA_KEY = "fm:reserved-concurrency"
CUSTOM_RESOURCE_HANDLER_REASON = (
    "CloudFormation custom-resource handler, invoked only during deployments (a few runs at a "
    "time); reserved concurrency would protect nothing and Lambda refuses reservations that "
    "leave an account fewer than 10 unreserved executions, failing deploys at default quotas."
)
#: Construct-path fragments of the deploy-time handlers CDK creates (this library's own handlers
#: get the reason from :func:`fm_constructs.policy.handler_function.handler_function`).
CUSTOM_RESOURCE_HANDLER_PATHS = (
    "KubectlProvider",  # aws-eks(-v2) kubectl handler and its provider framework
    "CustomResourceProvider",  # CDK's built-in providers (e.g. RestrictDefaultSecurityGroup)
    "CDKBucketDeployment",  # aws-s3-deployment
    "/framework-on",  # custom_resources.Provider framework functions
    "Provider/",
    "AWS679f53fac002430cb0da5b7982bd2287",  # AwsCustomResource singleton
)


def is_cdk_handler_function(node: IConstruct) -> TypeGuard[CfnResource]:
    """Whether ``node`` is the Lambda function of a custom-resource handler aws-cdk-lib creates
    (found by :data:`CUSTOM_RESOURCE_HANDLER_PATHS`)."""
    if not isinstance(node, CfnResource) or node.cfn_resource_type != "AWS::Lambda::Function":
        return False
    return any(fragment in node.node.path for fragment in CUSTOM_RESOURCE_HANDLER_PATHS)


@jsii.implements(IAspect)
class LambdaConcurrencyReasons:
    """Adds :data:`CUSTOM_RESOURCE_HANDLER_REASON` to every custom-resource handler function
    that has no reserved concurrency."""

    def visit(self, node: IConstruct) -> None:
        if not is_cdk_handler_function(node):
            return
        if node.get_metadata(METADATA_KEY) is None:
            node.add_metadata(METADATA_KEY, CUSTOM_RESOURCE_HANDLER_REASON)
