"""Custom resources answered in this process instead of by a Lambda invocation (moto would
run the function in Docker, which the rehearsal does not have).

CloudFormation first checks that ``ServiceToken`` names a Lambda function that exists; here
too. Then the answer depends on whose resource it is:

- The project's own handlers run their own code: the teardown guard's ``check`` with real boto3
  clients of the local AWS (so ``cdk destroy`` stops at the guard exactly when retained file
  systems or foreign groups remain), and the Grafana provisioner's own property handling
  (``data_sources``, ``load_dashboards``; its Grafana HTTP calls cannot run, no Grafana here).
- CDK's providers get a documented minimal answer that checks only what CloudFormation could
  not: the cluster, roles, buckets and objects their properties name exist, and the manifests
  and values they carry parse. Nothing is applied to a Kubernetes cluster, no chart is fetched.

A custom resource type without an answer here fails, so a new one cannot pass unseen.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import sys
import tempfile
import uuid
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
from moto.awslambda.utils import get_backend as lambda_backend
from moto.core.common_models import CloudFormationModel
from moto.ec2.models import ec2_backends
from moto.s3.models import s3_backends

from tests.rehearsal.local_aws import service_rules
from tests.rehearsal.local_aws.resources import Created, ResourceFailedError, existing

#: The local endpoint the in-process handlers' boto3 clients use (set by ``install``).
ENDPOINT: dict[str, str] = {}

#: ``answer(event, context) -> (physical id, data)``; raises ResourceFailedError to answer FAILED.
Answer = Callable[[Mapping[str, Any], Created], tuple[str, dict[str, Any]]]


def _client(service: str, region: str) -> Any:
    return boto3.client(
        service,
        region_name=region,
        endpoint_url=ENDPOINT["url"],
        aws_access_key_id="rehearsal",
        aws_secret_access_key="rehearsal",
    )


_DEPLOYED: dict[str, ModuleType] = {}
_CODE_DIR: list[Path] = []


def deployed_handler(where: Created) -> ModuleType:
    """The handler module of the Lambda function ``ServiceToken`` names, imported from the
    code package that was deployed (the asset the CDK CLI uploaded), not from the source tree:
    the rehearsal runs what the function would run."""
    function = lambda_backend(where.account, where.region).get_function(
        str(where.properties["ServiceToken"])
    )
    code = bytes(function.code_bytes)
    digest = hashlib.sha256(code).hexdigest()
    if digest not in _DEPLOYED:
        if not _CODE_DIR:
            _CODE_DIR.append(Path(tempfile.mkdtemp(prefix="rehearsal-lambda-")))
        target = _CODE_DIR[0] / digest
        with zipfile.ZipFile(io.BytesIO(code)) as archive:
            archive.extractall(target)
        module_name, _, _ = str(function.handler).rpartition(".")
        spec = importlib.util.spec_from_file_location(
            f"rehearsal_lambda_{digest[:12]}", target / f"{module_name.replace('.', '/')}.py"
        )
        if spec is None or spec.loader is None:
            raise ResourceFailedError(
                f"Runtime.ImportModuleError: Unable to import {function.handler}"
            )
        module = importlib.util.module_from_spec(spec)
        # Lambda puts the package root on the import path (the handler imports its siblings).
        sys.path.insert(0, str(target))
        sys.modules.pop("cfn_response", None)
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(str(target))
        _DEPLOYED[digest] = module
    return _DEPLOYED[digest]


def teardown_guard_answer(event: Mapping[str, Any], where: Created) -> tuple[str, dict[str, Any]]:
    """The project's guard, as deployed: on Delete, its ``check`` against the local FSx and
    EC2 APIs."""
    props = event["ResourceProperties"]
    reason = deployed_handler(where).check(
        event, _client("fsx", where.region), _client("ec2", where.region)
    )
    if reason:
        raise ResourceFailedError(reason)
    return str(event.get("PhysicalResourceId") or f"teardown-guard-{props['VpcId']}"), {}


def grafana_dashboards_answer(
    event: Mapping[str, Any], where: Created
) -> tuple[str, dict[str, Any]]:
    """The project's provisioner, as deployed, up to its Grafana HTTP calls: the workspace
    exists, the data sources build from the properties, every dashboard file listed is in the
    deployed package and parses, and their uids are the ones the properties list."""
    props = event["ResourceProperties"]
    grafana_provisioner = deployed_handler(where)
    workspaces = existing(where.account, where.region, "AWS::Grafana::Workspace")
    workspace_id = str(props["WorkspaceId"])
    if workspace_id not in workspaces:
        raise ResourceFailedError(f"ResourceNotFoundException: Workspace {workspace_id} not found")
    grafana_provisioner.data_sources(props)
    names = [str(n) for n in props.get("DashboardFiles", [])]
    try:
        dashboards = grafana_provisioner.load_dashboards(names, grafana_provisioner.DASHBOARD_DIR)
    except (OSError, ValueError) as error:
        raise ResourceFailedError(f"provisioning failed: {error}") from error
    uids = sorted(str(d.get("uid")) for d in dashboards)
    if uids != sorted(str(u) for u in props.get("DashboardUids", [])):
        raise ResourceFailedError(f"dashboard uids {uids} differ from DashboardUids")
    return workspace_id, {
        "FolderUid": str(props["FolderUid"]),
        "DashboardCount": str(len(dashboards)),
    }


def restrict_default_sg_answer(
    event: Mapping[str, Any], where: Created
) -> tuple[str, dict[str, Any]]:
    """CDK's provider: the default security group exists (its rules are revoked for real)."""
    group_id = str(event["ResourceProperties"]["DefaultSecurityGroupId"])
    group = ec2_backends[where.account][where.region].get_security_group_from_id(group_id)
    if group is None:
        raise ResourceFailedError(f"The security group '{group_id}' does not exist")
    if event["RequestType"] != "Delete":
        group.ingress_rules = []
        group.egress_rules = []
    return group_id, {}


def _kubectl_target(event: Mapping[str, Any], where: Created) -> None:
    props = event["ResourceProperties"]
    service_rules.cluster(where, str(props["ClusterName"]))
    service_rules.require_role(where, props.get("RoleArn"))


def kubernetes_resource_answer(
    event: Mapping[str, Any], where: Created
) -> tuple[str, dict[str, Any]]:
    """CDK's kubectl provider: the cluster exists and the manifest is a JSON list of
    Kubernetes objects, each with apiVersion, kind and metadata.name. Not applied."""
    _kubectl_target(event, where)
    manifest = json.loads(str(event["ResourceProperties"]["Manifest"]))
    if not isinstance(manifest, list):
        raise ResourceFailedError("Manifest must be a JSON list of Kubernetes objects")
    for item in manifest:
        if not (
            item.get("apiVersion") and item.get("kind") and item.get("metadata", {}).get("name")
        ):
            raise ResourceFailedError(f"error: error validating data: {json.dumps(item)[:200]}")
    return str(event.get("PhysicalResourceId") or f"kubernetes-{uuid.uuid4().hex[:12]}"), {}


def helm_chart_answer(event: Mapping[str, Any], where: Created) -> tuple[str, dict[str, Any]]:
    """CDK's Helm provider: the cluster exists, the chart is named with a repository or a
    chart asset that exists, and the values parse as JSON. No chart is fetched or installed."""
    _kubectl_target(event, where)
    props = event["ResourceProperties"]
    if not props.get("Chart") or not props.get("Release"):
        raise ResourceFailedError("Error: INSTALLATION FAILED: chart and release are required")
    if props.get("ChartAssetURL"):
        bucket, key = str(props["ChartAssetURL"]).removeprefix("s3://").split("/", 1)
        try:
            s3_backends[where.account]["aws"].get_object(bucket, key)
        except Exception as error:
            raise ResourceFailedError(f"NoSuchKey: {props['ChartAssetURL']}") from error
    elif not props.get("Repository"):
        raise ResourceFailedError("Error: INSTALLATION FAILED: no repository for the chart")
    if props.get("Values"):
        json.loads(str(props["Values"]))
    return str(event.get("PhysicalResourceId") or f"helm-{props['Release']}"), {}


def bucket_deployment_answer(
    event: Mapping[str, Any], where: Created
) -> tuple[str, dict[str, Any]]:
    """CDK's bucket deployment: the source objects and the destination bucket exist."""
    props = event["ResourceProperties"]
    backend = s3_backends[where.account]["aws"]
    for bucket, key in zip(props["SourceBucketNames"], props["SourceObjectKeys"], strict=True):
        try:
            backend.get_object(bucket, key)
        except Exception as error:
            raise ResourceFailedError(f"NoSuchKey: s3://{bucket}/{key}") from error
    service_rules.require_bucket(where, str(props["DestinationBucketName"]))
    return str(event.get("PhysicalResourceId") or f"aws.cdk.s3deployment.{uuid.uuid4()}"), {}


ANSWERS: dict[str, Answer] = {
    "Custom::VpcTeardownGuard": teardown_guard_answer,
    "Custom::GrafanaDashboards": grafana_dashboards_answer,
    "Custom::VpcRestrictDefaultSG": restrict_default_sg_answer,
    "Custom::AWSCDK-EKS-KubernetesResource": kubernetes_resource_answer,
    "Custom::AWSCDK-EKS-HelmChart": helm_chart_answer,
    "Custom::CDKBucketDeployment": bucket_deployment_answer,
}


def _failed(message: str) -> ResourceFailedError:
    return ResourceFailedError(
        f"Received response status [FAILED] from custom resource. Message returned: {message}"
    )


class InProcessCustomResource(CloudFormationModel):
    """A custom resource whose events are answered by ``ANSWERS`` in this process."""

    def __init__(self, where: Created, data: dict[str, Any]) -> None:
        self.where = where
        self.data = data

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::Rehearsal::InProcessCustomResource"

    @property
    def physical_resource_id(self) -> str:
        return self.where.physical_id

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return True

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        if attribute_name in self.data:
            return self.data[attribute_name]
        raise ResourceFailedError(
            f"CustomResource attribute error: Vendor response doesn't contain "
            f"{attribute_name} key in object {self.where.stack_id}|{self.where.logical_id}"
        )

    def is_created(self) -> bool:
        return True

    @staticmethod
    def _event(where: Created, request: str, **extra: Any) -> dict[str, Any]:
        return {
            "RequestType": request,
            "ResponseURL": "",
            "StackId": where.stack_id,
            "RequestId": str(uuid.uuid4()),
            "ResourceType": where.resource_type,
            "LogicalResourceId": where.logical_id,
            "ResourceProperties": where.properties,
            **extra,
        }

    @staticmethod
    def _answer(event: Mapping[str, Any], where: Created) -> tuple[str, dict[str, Any]]:
        answer = ANSWERS.get(where.resource_type)
        if answer is None:
            raise ResourceFailedError(
                f"no in-process answer for custom resource type {where.resource_type}"
            )
        token = str(where.properties.get("ServiceToken", ""))
        try:
            lambda_backend(where.account, where.region).get_function(token)
        except Exception as error:
            raise ResourceFailedError(
                f"Invalid service token {token}: the Lambda function does not exist"
            ) from error
        try:
            return answer(event, where)
        except ResourceFailedError as error:
            raise _failed(error.message) from error
        except (KeyError, ValueError, TypeError) as error:
            raise _failed(f"{type(error).__name__}: {error}") from error

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> InProcessCustomResource:
        where = Created(
            resource_type=str(kwargs["ResourceType"]),
            physical_id="",
            properties=dict(cloudformation_json.get("Properties") or {}),
            account=account_id,
            region=region_name,
            logical_id=str(kwargs["LogicalId"]),
            stack_id=str(kwargs["StackId"]),
        )
        physical_id, data = cls._answer(cls._event(where, "Create"), where)
        where.physical_id = physical_id
        return cls(where, data)

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[override]
        cls,
        original_resource: InProcessCustomResource,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> InProcessCustomResource:
        old = original_resource.where
        where = Created(
            old.resource_type,
            old.physical_id,
            dict(cloudformation_json.get("Properties") or {}),
            {},
            account_id,
            region_name,
            old.logical_id,
            old.stack_id,
        )
        event = cls._event(
            where,
            "Update",
            PhysicalResourceId=old.physical_id,
            OldResourceProperties=old.properties,
        )
        physical_id, data = cls._answer(event, where)
        where.physical_id = physical_id
        return cls(where, data)

    def delete(self, account_id: str, region_name: str) -> None:
        event = self._event(self.where, "Delete", PhysicalResourceId=self.where.physical_id)
        self._answer(event, self.where)
