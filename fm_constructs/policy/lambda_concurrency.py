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

from typing import TypeGuard, cast

import jsii
from aws_cdk import CfnResource, IAspect
from constructs import IConstruct

from fm_constructs.policy.construct_ids import object_id

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


#: CloudFormation type of each generated L1 class (``CfnFunction`` -> ``AWS::Lambda::Function``),
#: read once per class: the aspects ask it of every resource of an app.
_L1_RESOURCE_TYPES: dict[type, str] = {}
_TYPE_NAME = "CFN_RESOURCE_TYPE_NAME"
#: CloudFormation type of each plain CfnResource, by its JavaScript object id: fixed when the
#: resource is created, and asked by each guard aspect.
_PLAIN_RESOURCE_TYPES: dict[str, str] = {}


def cfn_resource_type(node: IConstruct) -> str | None:
    """The CloudFormation type of ``node`` when it is a CfnResource, else None.

    The guard aspects ask this of every construct, and each property read is a round trip to
    the CDK's JavaScript. An L1 class (``CfnFunction``) fixes its type in its constructor
    (``CFN_RESOURCE_TYPE_NAME``), so that is read once per class; a plain ``CfnResource``
    (CDK's ``CustomResourceProvider`` handlers) is asked once per resource. The class is found
    in the method resolution order rather than by ``isinstance``: CfnResource has a subclass
    per resource type, and the abstract-class check walks them all for each new class it
    meets."""
    cls = type(node)
    if CfnResource not in cls.__mro__:
        return None
    known = _L1_RESOURCE_TYPES.get(cls)
    if known is not None:
        return known
    for klass in cls.__mro__:
        if klass is CfnResource:
            break
        if _TYPE_NAME in vars(klass):
            resource_type = str(getattr(klass, _TYPE_NAME))
            _L1_RESOURCE_TYPES[cls] = resource_type
            return resource_type
    ref = object_id(node)
    plain = _PLAIN_RESOURCE_TYPES.get(ref)
    if plain is None:
        plain = _PLAIN_RESOURCE_TYPES[ref] = cast(CfnResource, node).cfn_resource_type
    return plain


def is_lambda_function(node: IConstruct) -> TypeGuard[CfnResource]:
    """Whether ``node`` is a CloudFormation ``AWS::Lambda::Function`` (an L1 ``CfnFunction``
    or a plain CfnResource of that type)."""
    return cfn_resource_type(node) == "AWS::Lambda::Function"


def is_cdk_handler_function(node: IConstruct) -> TypeGuard[CfnResource]:
    """Whether ``node`` is the Lambda function of a custom-resource handler aws-cdk-lib creates
    (found by :data:`CUSTOM_RESOURCE_HANDLER_PATHS`)."""
    if not is_lambda_function(node):
        return False
    path = node.node.path
    return any(fragment in path for fragment in CUSTOM_RESOURCE_HANDLER_PATHS)


@jsii.implements(IAspect)
class LambdaConcurrencyReasons:
    """Adds :data:`CUSTOM_RESOURCE_HANDLER_REASON` to every custom-resource handler function
    that has no reserved concurrency."""

    def visit(self, node: IConstruct) -> None:
        if not is_cdk_handler_function(node):
            return
        if node.get_metadata(METADATA_KEY) is None:
            node.add_metadata(METADATA_KEY, CUSTOM_RESOURCE_HANDLER_REASON)
