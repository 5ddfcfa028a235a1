"""EfaNodeGroup.use_lnet_over_efa: the launch template's user data gains the LNet-over-EFA part
after its nodeadm NodeConfig, and nothing else in the template changes; a group that is not
asked (a file system without EFA) is left as it was. What the part does on a node is tested in
tests/unit/test_eks_lnet_efa.py."""

from __future__ import annotations

import copy
import email
from typing import Any

import aws_cdk as cdk

from fm_constructs.orchestration import EfaNodeGroup, lustre_efa_client
from fm_constructs.planning.efa_layout import EfaLayout
from tests.support import TEST_ENV, cfn_lint, imported_vpc, plain_eks_cluster


def _group(
    name: str, instance_type: str = "p5.48xlarge", efa_layout: EfaLayout | None = EfaLayout.EFA_ONLY
) -> tuple[cdk.Stack, EfaNodeGroup]:
    app = cdk.App()
    stack = cdk.Stack(app, name, env=TEST_ENV)
    vpc = imported_vpc(stack)
    cluster = plain_eks_cluster(stack, vpc)
    group = EfaNodeGroup(
        stack,
        "Nodes",
        cluster=cluster,
        instance_type=instance_type,
        subnet=vpc.private_subnets[0],
        node_count=2,
        efa_layout=efa_layout,
    )
    return stack, group


def _template(stack: cdk.Stack) -> dict[str, Any]:
    assembly = stack.node.root.synth()  # type: ignore[attr-defined]
    template: dict[str, Any] = assembly.get_stack_by_name(stack.stack_name).template
    return template


def _user_data(template: dict[str, Any]) -> str:
    (lt,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::EC2::LaunchTemplate"]
    value = lt["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]
    assert isinstance(value, str)
    return value


def test_the_nodes_get_lnet_over_efa_before_kubelet_and_nothing_else_changes() -> None:
    plain_stack, _ = _group("Plain")
    efa_stack, group = _group("Efa")
    assert group.use_lnet_over_efa(efa_clients=2) == 8  # the FSx guide's 8 for p5
    assert group.use_lnet_over_efa(efa_clients=500) == 8  # a second call keeps the first
    plain, efa = _template(plain_stack), _template(efa_stack)
    assert cfn_lint(efa, TEST_ENV.region or "us-east-1") == []
    plain, efa = copy.deepcopy(plain), copy.deepcopy(efa)
    user_data = _user_data(efa)
    assert user_data == group.launch_template.user_data
    parts = [p for p in email.message_from_string(user_data).walk() if not p.is_multipart()]
    assert [p.get_content_type() for p in parts] == [
        "application/node.eks.aws",
        "text/x-shellscript",
    ]
    # The nodeadm part is the one the plain group has; the shell part is the LNet set-up.
    plain_parts = [
        p for p in email.message_from_string(_user_data(plain)).walk() if not p.is_multipart()
    ]
    assert parts[0].get_payload() == plain_parts[0].get_payload()
    assert str(parts[1].get_payload()).strip() == (
        lustre_efa_client.setup_script("p5.48xlarge", 8).strip()
    )
    # Everything but the user data is the same template.
    for template in (plain, efa):
        for resource in template["Resources"].values():
            if resource["Type"] == "AWS::EC2::LaunchTemplate":
                del resource["Properties"]["LaunchTemplateData"]["UserData"]
    assert plain == efa


def test_a_group_without_efa_interfaces_is_left_as_it_is() -> None:
    stack, group = _group("NoEfa", "g6e.2xlarge", efa_layout=None)
    before = group.launch_template.user_data
    assert group.use_lnet_over_efa(efa_clients=4) == 0
    assert group.launch_template.user_data == before
    assert "fm-lnet-efa" not in (_user_data(_template(stack)) if before else "")


def test_trn2_nodes_stay_on_tcp_as_fsx_takes_no_efa_clients_of_that_family() -> None:
    stack, group = _group("Trn2", "trn2.48xlarge")
    before = group.launch_template.user_data
    assert group.use_lnet_over_efa(efa_clients=2) == 0
    assert group.launch_template.user_data == before
    messages = [
        str(m.entry.data)
        for m in stack.node.root.synth().get_stack_by_name("Trn2").messages  # type: ignore[attr-defined]
    ]
    assert any("over TCP: FSx does not support EFA clients of the trn2" in m for m in messages)
