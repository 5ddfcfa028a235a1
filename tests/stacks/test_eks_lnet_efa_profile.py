"""A profile whose EKS workloads share an EFA-enabled file system: every EFA node group of both
workloads gets LNet over EFA before kubelet, with the FSx guide's interfaces within a share of
the file system's 1,024 EFA connections counted over both workloads (FM316's count); the same
profile without EFA leaves the node groups' user data without it."""

from __future__ import annotations

import email
from typing import Any

from fm_constructs.config import parse_profile
from fm_constructs.orchestration import EfaNodeGroup
from stacks.app_builder import build_stacks, create_app
from tests.stacks.profiles import cdk_json_context

STORAGE = {"storage_capacity_gib": 4800, "throughput_mb_s_per_tib": 1000}


def _profile(efa: bool) -> dict[str, Any]:
    return {
        "platform": {
            "name": "lnet",
            "region": "us-east-1",
            "availability_zone": "us-east-1a",
            "availability_zones": ["us-east-1a", "us-east-1b"],
            "observability": False,
        },
        "pretraining": {
            "enabled": True,
            "instance_type": "p5.48xlarge",
            "instance_count": 120,
            "storage": {**STORAGE, "efa_enabled": efa},
        },
        "post_training": {
            "enabled": True,
            "instance_type": "p5en.48xlarge",
            "instance_count": 76,
            "rollout": {"enabled": True, "instance_type": "g6e.48xlarge", "instance_count": 4},
            "storage": {"reuse_pretraining": True},
        },
    }


def _groups(efa: bool) -> dict[str, EfaNodeGroup]:
    app = create_app(context=cdk_json_context())
    build_stacks(app, parse_profile(_profile(efa)))
    return {c.node.path: c for c in app.node.find_all() if isinstance(c, EfaNodeGroup)}


def _shell_parts(user_data: str | None) -> list[str]:
    assert user_data is not None
    message = email.message_from_string(user_data)
    return [
        str(p.get_payload()) for p in message.walk() if p.get_content_type() == "text/x-shellscript"
    ]


def test_eks_nodes_of_an_efa_file_system_share_its_connections() -> None:
    groups = _groups(efa=True)
    # Both workloads' trainers and the rollout group.
    assert sorted(g.instance_spec.name for g in groups.values()) == [
        "g6e.48xlarge",
        "p5.48xlarge",
        "p5en.48xlarge",
    ]
    # 120 + 76 + 4 = 200 EFA nodes on one file system: 1024 // 200 = 5 interfaces each (the
    # guide's 8 for p5 and p5en would need 1,568); the g6e's 2 stay within it.
    for group in groups.values():
        expected = 2 if group.instance_spec.name == "g6e.48xlarge" else 5
        assert group.lnet_efa_interfaces == expected
        (part,) = _shell_parts(group.launch_template.user_data)
        assert f"fm-lnet-efa-boot {group.instance_spec.name} {expected}" in part
        assert "Before=nodeadm-run.service kubelet.service" in part


def test_eks_nodes_of_a_file_system_without_efa_are_left_on_tcp() -> None:
    for group in _groups(efa=False).values():
        assert group.lnet_efa_interfaces == 0
        assert "fm-lnet-efa" not in (group.launch_template.user_data or "")
