"""The online rules (rules/online/) on real botocore clients answered by botocore's Stubber: the
finding of each outcome (an info when the check passes), and an unanswered call raised as
AwsCallError naming the IAM action."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from fm_constructs.rules.findings import Severity
from fm_constructs.rules.online import ec2, eks, iam, pcs, quotas, sagemaker
from fm_constructs.rules.online.aws import AwsCallError

ACCOUNT = "123456789012"


@pytest.fixture
def client(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Stubber]]:
    service = request.param
    made = boto3.client(
        service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(made) as stubber:
        yield made, stubber
        stubber.assert_no_pending_responses()


def _role(arn: str, name: str) -> dict[str, Any]:
    return {
        "Role": {
            "Path": "/",
            "RoleName": name,
            "RoleId": "AROAEXAMPLEEXAMPLE123",
            "Arn": arn,
            "CreateDate": datetime(2026, 1, 1, tzinfo=UTC),
        }
    }


@pytest.mark.parametrize("client", ["iam"], indirect=True)
def test_admin_role_outcomes(client: tuple[Any, Stubber]) -> None:
    made, stubber = client
    ops = f"arn:aws:iam::{ACCOUNT}:role/Ops"
    stubber.add_response("get_role", _role(ops, "Ops"), {"RoleName": "Ops"})
    stubber.add_client_error("get_role", "NoSuchEntity", expected_params={"RoleName": "Gone"})
    with_path = f"arn:aws:iam::{ACCOUNT}:role/team/Admin"
    stubber.add_response("get_role", _role(with_path, "Admin"), {"RoleName": "Admin"})
    (passed,) = iam.admin_role(made, ops)
    assert (passed.severity, passed.allowed, passed.code) == (
        Severity.INFO,
        f"{ops} exists",
        "FM710",
    )
    (missing,) = iam.admin_role(made, f"arn:aws:iam::{ACCOUNT}:role/Gone")
    assert missing.is_error and f"no role Gone in account {ACCOUNT}" in missing.allowed
    (other,) = iam.admin_role(made, f"arn:aws:iam::{ACCOUNT}:role/Admin")
    assert other.is_error and other.fix == f"write {with_path} in platform.admin_role_arns"
    (malformed,) = iam.admin_role(made, "not-an-arn")
    assert malformed.is_error and "is not an IAM role ARN" in malformed.allowed


@pytest.mark.parametrize("client", ["iam"], indirect=True)
def test_an_unanswered_call_names_its_action(client: tuple[Any, Stubber]) -> None:
    made, stubber = client
    stubber.add_client_error("get_role", "AccessDenied", expected_params={"RoleName": "Ops"})
    with pytest.raises(AwsCallError) as raised:
        iam.admin_role(made, f"arn:aws:iam::{ACCOUNT}:role/Ops")
    assert raised.value.action == "iam:GetRole"


@pytest.mark.parametrize("client", ["eks"], indirect=True)
@pytest.mark.parametrize(
    ("versions", "severity"),
    [
        ([{"clusterVersion": "1.35", "versionStatus": "STANDARD_SUPPORT"}], Severity.INFO),
        ([{"clusterVersion": "1.35", "versionStatus": "EXTENDED_SUPPORT"}], Severity.WARNING),
        ([], Severity.ERROR),
    ],
)
def test_kubernetes_version_outcomes(
    client: tuple[Any, Stubber], versions: list[dict[str, str]], severity: Severity
) -> None:
    made, stubber = client
    stubber.add_response(
        "describe_cluster_versions", {"clusterVersions": versions}, {"clusterVersions": ["1.35"]}
    )
    (found,) = eks.kubernetes_version_supported(made, "1.35", "us-east-1")
    assert found.severity is severity and found.code == "FM709"
    assert found.allowed.startswith(
        "Kubernetes 1.35:" if versions else "EKS does not offer Kubernetes 1.35 in us-east-1"
    )


@pytest.mark.parametrize("client", ["pcs"], indirect=True)
def test_pcs_creating_outcomes(client: tuple[Any, Stubber]) -> None:
    made, stubber = client
    cluster = {
        "name": "busy",
        "id": "pcs_0123456789",
        "arn": f"arn:aws:pcs:us-east-1:{ACCOUNT}:cluster/pcs_0123456789",
        "createdAt": datetime(2026, 1, 1, tzinfo=UTC),
        "modifiedAt": datetime(2026, 1, 1, tzinfo=UTC),
        "status": "CREATING",
    }
    stubber.add_response("list_clusters", {"clusters": [cluster]}, {})
    stubber.add_response("list_clusters", {"clusters": []}, {})
    (busy,) = pcs.no_cluster_creating(made, "us-east-1")
    assert busy.severity is Severity.WARNING and "PCS is creating busy" in busy.allowed
    (free,) = pcs.no_cluster_creating(made, "us-east-1")
    assert free.severity is Severity.INFO
    assert free.allowed == "no PCS cluster is being created in us-east-1"


PCS_IMAGE = "ami-0a1b2c3d4e5f60718"


@pytest.mark.parametrize("client", ["ec2"], indirect=True)
def test_pinned_pcs_ami_outcomes(client: tuple[Any, Stubber]) -> None:
    made, stubber = client
    params = {"ImageIds": [PCS_IMAGE]}
    image = {"ImageId": PCS_IMAGE, "Name": "fm-pcs-ubuntu-22.04-x86_64-slurm-25.05-1"}
    answers = [
        {"Images": [{**image, "State": "available", "Architecture": "x86_64"}]},
        {"Images": [{**image, "State": "deregistered", "Architecture": "x86_64"}]},
        {"Images": [{**image, "State": "available", "Architecture": "arm64"}]},
        {"Images": []},
    ]
    for answer in answers:
        stubber.add_response("describe_images", answer, params)
    stubber.add_client_error("describe_images", "InvalidAMIID.NotFound", expected_params=params)
    found = [
        pcs.pinned_ami_available(made, "pretraining", PCS_IMAGE, "x86_64", "us-east-1")[0]
        for _ in range(len(answers) + 1)
    ]
    available, deregistered, other_arch, empty, missing = found
    assert available.severity is Severity.INFO and "is available in us-east-1" in available.allowed
    assert "is deregistered in us-east-1" in deregistered.allowed
    assert "an arm64 image; the nodes are x86_64" in other_arch.allowed
    for finding in (empty, missing):
        assert "names no image this account can launch in us-east-1" in finding.allowed
    for finding in (deregistered, other_arch, empty, missing):
        assert (finding.code, finding.severity) == ("FM712", Severity.ERROR)
        assert finding.key == "pretraining.pcs_ami.id" and "fmc pcs-ami" in finding.fix
    stubber.assert_no_pending_responses()


@pytest.mark.parametrize("client", ["ec2"], indirect=True)
def test_instance_type_offered_outcomes(client: tuple[Any, Stubber]) -> None:
    made, stubber = client
    params = {
        "LocationType": "availability-zone",
        "Filters": [{"Name": "instance-type", "Values": ["p5.48xlarge"]}],
    }
    offering = {"InstanceType": "p5.48xlarge", "LocationType": "availability-zone"}
    for zones in (["us-east-1a"], ["us-east-1c", "us-east-1b"], []):
        offerings = [{**offering, "Location": zone} for zone in zones]
        stubber.add_response(
            "describe_instance_type_offerings", {"InstanceTypeOfferings": offerings}, params
        )
    found = [
        ec2.instance_type_offered(made, "p5.48xlarge", "us-east-1a", "us-east-1", workload="w")[0]
        for _ in range(3)
    ]
    assert [f.severity for f in found] == [Severity.INFO, Severity.ERROR, Severity.ERROR]
    assert found[0].allowed == "p5.48xlarge is offered in us-east-1a"
    assert found[1].allowed.endswith("it is offered in us-east-1b, us-east-1c")
    assert found[2].fix == "choose another region (platform.region) or another w.instance_type"


def test_hyperpod_instance_type_reads_the_sagemaker_model() -> None:
    made = boto3.client(
        "sagemaker", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    (listed,) = sagemaker.hyperpod_instance_type(
        made, "ml.p5.48xlarge", "p5.48xlarge", workload="w"
    )
    assert listed.severity is Severity.INFO and listed.code == "FM705"
    (unlisted,) = sagemaker.hyperpod_instance_type(made, None, "g6.4xlarge", workload="w")
    assert unlisted.is_error and unlisted.allowed.startswith("g6.4xlarge is not a HyperPod")


@pytest.mark.parametrize("client", ["service-quotas"], indirect=True)
def test_ec2_vcpu_quota_outcomes(client: tuple[Any, Stubber]) -> None:
    made, stubber = client
    params = {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"}
    for value in (1152.0, 768.0):
        stubber.add_response("get_service_quota", {"Quota": {"Value": value}}, params)
    stubber.add_client_error("get_service_quota", "NoSuchResourceException", expected_params=params)
    name = "Running On-Demand P instances"
    found = [
        quotas.ec2_vcpu_quota(made, "L-417A185B", name, 1152, ["w 6 x p5.48xlarge"], "us-east-1")[0]
        for _ in range(3)
    ]
    assert [f.severity for f in found] == [Severity.INFO, Severity.ERROR, Severity.WARNING]
    assert "768 vCPUs, the profile needs 1,152 (w 6 x p5.48xlarge)" in found[1].allowed
    assert "--quota-code L-417A185B --desired-value 1152 --region us-east-1" in found[1].fix


def test_hyperpod_quota_outcomes() -> None:
    name = "ml.p5.48xlarge for cluster usage"
    listed = {name: {"QuotaName": name, "QuotaCode": "L-1", "Value": 4.0}}
    assert quotas.hyperpod_quota(listed, name, 4, "us-east-1")[0].severity is Severity.INFO
    (short,) = quotas.hyperpod_quota(listed, name, 8, "us-east-1")
    assert short.is_error and short.allowed == f"{name}: 4, the profile needs 8"
    (absent,) = quotas.hyperpod_quota({}, name, 8, "us-east-1")
    assert absent.severity is Severity.WARNING


def test_fsx_storage_quota_counts_existing_and_planned_file_systems() -> None:
    def made(service: str) -> Any:
        return boto3.client(
            service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
        )

    service_quotas, fsx = made("service-quotas"), made("fsx")
    quota = {
        "QuotaName": "Lustre Persistent_2 storage capacity (GiB)",
        "QuotaCode": "L-1",
        "Value": 100000.0,
    }
    existing = {
        "FileSystemType": "LUSTRE",
        "StorageCapacity": 96000,
        "LustreConfiguration": {"DeploymentType": "PERSISTENT_2"},
    }
    with Stubber(service_quotas) as quotas_stub, Stubber(fsx) as fsx_stub:
        quotas_stub.add_response("list_service_quotas", {"Quotas": [quota]}, {"ServiceCode": "fsx"})
        fsx_stub.add_response("describe_file_systems", {"FileSystems": [existing]}, {})
        (found,) = quotas.fsx_storage_quota(service_quotas, fsx, 4800, "us-east-1")
    assert found.is_error and found.code == "FM708"
    assert "existing PERSISTENT_2 file systems 96,000 GiB + planned 4,800 GiB" in found.allowed
    assert "--quota-code L-1 --desired-value 100800 --region us-east-1" in found.fix
