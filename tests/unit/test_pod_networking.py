"""Pod networking at scale: custom networking arithmetic, the CNI settings and ENIConfigs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fm_constructs.catalog import get_instance_type
from fm_constructs.config import load_profile
from fm_constructs.config.options import deployment_options
from fm_constructs.config.subnet_demand import demand_problems, subnet_demand
from fm_constructs.kubernetes.eni_config import eni_config, eni_configs
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.kubernetes_versions import DEFAULT_KUBERNETES_VERSION
from fm_constructs.planning.pod_networking import (
    PodNetworking,
    node_subnet_prefix_addressing,
    pod_enis_with_custom_networking,
    pod_subnet_addresses_per_node,
    vpc_cni_environment,
)
from fm_constructs.planning.vpc_layout import node_cidr_blocks, secondary_block_problems
from fm_constructs.rules import scale as scale_rules
from tests.kubernetes_schemas import SchemaError, validate_object, vpc_cni_crds

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("instance_type", "enis"),
    [
        # card 0: 2 interfaces, the primary ENA and the efa-only interface at device index 1
        ("p5.48xlarge", 0),
        ("p5e.48xlarge", 0),
        ("trn2.48xlarge", 0),
        # card 0: 4 interfaces, primary + efa-only leave 2
        ("p5en.48xlarge", 2),
        ("p6-b200.48xlarge", 2),
        # card 0 without EFA: only the primary sits there
        ("p6-b300.48xlarge", 3),
        ("p4d.24xlarge", 13),
    ],
)
def test_pod_enis_under_custom_networking(instance_type: str, enis: int) -> None:
    spec = get_instance_type(instance_type)
    assert pod_enis_with_custom_networking(spec, EfaLayout.EFA_ONLY) == enis


def test_pod_subnet_addresses_count_prefixes_and_eni_primaries() -> None:
    spec = get_instance_type("p5en.48xlarge")
    # 32 pods: 2 prefixes, one spare (WARM_PREFIX_TARGET=1), on one pod ENI (49 prefixes fit)
    addressing = pod_subnet_addresses_per_node(spec, EfaLayout.EFA_ONLY, 32)
    assert (addressing.prefixes, addressing.attached_enis, addressing.addresses) == (3, 1, 49)
    assert addressing.fits_node
    # 33 pods need a third prefix
    assert pod_subnet_addresses_per_node(spec, EfaLayout.EFA_ONLY, 33).prefixes == 4
    # p5: no pod ENI at all
    assert not pod_subnet_addresses_per_node(
        get_instance_type("p5.48xlarge"), EfaLayout.EFA_ONLY, 32
    ).fits_node


def test_cni_environment_uses_only_keys_the_pinned_cni_reads() -> None:
    env = vpc_cni_environment(PodNetworking.CUSTOM_NETWORKING)
    data = vpc_cni_crds()
    known = set(data["env"]) | set(data["ipamd_env"])
    assert set(env) <= known
    assert env["AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"] == "true"
    assert env["ENABLE_PREFIX_DELEGATION"] == "true"
    assert env["ENI_CONFIG_LABEL_DEF"] == "topology.kubernetes.io/zone"
    assert vpc_cni_environment(PodNetworking.NODE_SUBNET) == {}


def test_eni_configs_match_the_crd_schema() -> None:
    objects = eni_configs({"us-east-1b": "subnet-0b", "us-east-1a": "subnet-0a"})
    assert [o["metadata"]["name"] for o in objects] == ["us-east-1a", "us-east-1b"]
    for obj in objects:
        assert validate_object(obj, DEFAULT_KUBERNETES_VERSION) == "vpc-cni-crd"
    with_groups = eni_config("us-east-1a", "subnet-0a", security_group_ids=["sg-1"])
    validate_object(with_groups, DEFAULT_KUBERNETES_VERSION)


def test_eni_config_schema_rejects_unknown_fields_and_a_missing_subnet() -> None:
    bad = eni_config("us-east-1a", "subnet-0a")
    bad["spec"]["subnets"] = ["subnet-0a"]
    with pytest.raises(SchemaError, match="subnets"):
        validate_object(bad, DEFAULT_KUBERNETES_VERSION)
    missing = eni_config("us-east-1a", "subnet-0a")
    del missing["spec"]["subnet"]
    with pytest.raises(SchemaError, match="subnet"):
        validate_object(missing, DEFAULT_KUBERNETES_VERSION)


@pytest.mark.parametrize(
    ("pod_cidr", "fragment"),
    [
        ("100.64.0.0/16", None),
        ("100.64.0.0/15", "between /16 and /28"),
        ("100.64.0.1/16", "host bits"),
        ("10.0.0.0/16", "overlap"),
        ("8.8.0.0/16", "secondary ranges"),
    ],
)
def test_pod_cidr_restrictions(pod_cidr: str, fragment: str | None) -> None:
    problems = secondary_block_problems(pod_cidr, "10.0.0.0/16")
    if fragment is None:
        assert problems == []
    else:
        assert any(fragment in p for p in problems), problems


def _default_with(**pretraining: object) -> object:
    profile = load_profile(ROOT / "config" / "default.toml")
    return dataclasses.replace(
        profile, pretraining=dataclasses.replace(profile.pretraining, **pretraining)
    )


def test_auto_keeps_the_node_subnet_while_it_fits() -> None:
    profile = load_profile(ROOT / "config" / "default.toml")
    demand = subnet_demand(profile)
    assert demand.networking is PodNetworking.NODE_SUBNET and demand.fits
    assert deployment_options(profile).pod_networking is PodNetworking.NODE_SUBNET


def test_auto_switches_to_custom_networking_when_the_node_subnet_is_too_small() -> None:
    profile = _default_with(instance_type="p5en.48xlarge", instance_count=1000)
    plain = subnet_demand(profile, networking=PodNetworking.NODE_SUBNET)
    # the private subnet cannot hold the pool, and one node subnet cannot either: an EFA pool
    # is never split across subnets
    assert not plain.node_subnets and plain.pool_problems
    demand = subnet_demand(profile)
    assert demand.networking is PodNetworking.CUSTOM_NETWORKING
    assert demand.fits, demand_problems(demand, profile.platform.vpc_cidr)
    assert demand.pod_subnet is not None
    (group,) = (g for g in demand.pod_subnet.node_groups if g.name == "pretraining")
    # whole /28s: 3 prefixes and the pod ENI's own address, which may spoil a fourth
    assert group.pod_subnet_addresses == 1000 * 4 * 16
    options = deployment_options(profile)
    assert options.custom_networking
    assert options.workloads["pretraining"].max_pods_per_node == 32


def test_custom_networking_is_refused_where_card_0_is_full() -> None:
    profile = _default_with(instance_count=1024, max_pods_per_node=16)  # p5.48xlarge
    demand = subnet_demand(profile, networking=PodNetworking.CUSTOM_NETWORKING)
    (finding,) = [p for p in demand.networking_problems if "p5.48xlarge" in p.allowed]
    assert (finding.code, finding.key) == ("FM602", "platform.pod_networking")
    problem = finding.line()
    assert "no free interface slot" in problem and "never become ready" in problem
    # auto does not pick a networking that cannot work: the pool gets a node subnet instead
    auto = subnet_demand(profile)
    assert auto.networking is PodNetworking.PREFIX_DELEGATION and auto.node_subnets
    assert auto.fits, demand_problems(auto, profile.platform.vpc_cidr)


#: The 1,024 x p5 variant: the default profile at 1,024 nodes, one job pod a node.
P5_1024 = {"instance_count": 1024, "max_pods_per_node": 16}


def test_the_1024_p5_pool_keeps_one_node_subnet() -> None:
    """p5.48xlarge has no room on card 0 for custom networking; with prefix delegation the
    whole pool (342 + 341 + 341 nodes) moves to one node subnet of a secondary /16, never
    split across subnets (EFA). At 16 pods a node takes 2 prefixes and its own address: at
    most 3 whole /28s, 3,072 of the 4,094 a /16 holds."""
    profile = _default_with(**P5_1024)
    demand = subnet_demand(profile)
    assert demand.networking is PodNetworking.PREFIX_DELEGATION
    assert demand.fits and not demand_problems(demand, profile.platform.vpc_cidr)
    (pool,) = [g for g in demand.node_groups if g.name == "pretraining"]
    assert (pool.prefixes, pool.node_subnet_blocks) == (2, 3)
    assert demand.moved == 1024 * 3 * 16
    assert demand.required == (
        sum(g.worst_case_addresses(g.nodes) for g in demand.node_groups)
        + sum(n * 16 for _, n in demand.fixed)
        - 1024 * 3 * 16
    )
    assert demand.free > 0
    layout = [
        (s.cidr, [(p.group, p.index, p.nodes, p.worst_case) for p in s.parts])
        for s in demand.node_subnets
    ]
    assert layout == [
        (
            "10.1.0.0/16",
            [
                ("pretraining", 0, 342, 342 * 48),
                ("pretraining", 1, 341, 341 * 48),
                ("pretraining", 2, 341, 341 * 48),
            ],
        )
    ]
    (subnet,) = demand.node_subnets
    # 4,096 /28s in a /16, less the two holding the addresses AWS reserves
    assert subnet.usable == (4096 - 2) * 16 and subnet.fits
    assert [demand.subnet_of("pretraining", i) for i in range(3)] == [1, 1, 1]
    assert demand.subnet_of("post_training", 0) == 0
    options = deployment_options(profile)
    assert options.prefix_delegation
    assert options.node_subnet_cidrs == ("10.1.0.0/16",)
    assert options.node_group_subnets == {"pretraining": (1, 1, 1)}
    assert options.workloads["pretraining"].max_pods_per_node == 16


def test_a_pool_larger_than_one_node_subnet_is_an_error_naming_the_fix() -> None:
    """At 32 pods a p5 node takes up to 4 /28s: 1,024 nodes need 4,096 of 4,094. The pool is
    not split across subnets; the error names the max pods and the node count that fit."""
    profile = _default_with(instance_count=1024)
    demand = subnet_demand(profile)
    assert not demand.fits and not demand.node_subnets
    (line,) = [f.line() for f in demand_problems(demand, profile.platform.vpc_cidr)]
    assert line.startswith("pretraining.max_pods_per_node: the 1,024 p5.48xlarge nodes")
    assert "4,096 needed" in line and "4,094 whole /28s" in line
    assert "set pretraining.max_pods_per_node = 16" in line
    assert "lower the pool to 1,023 nodes" in line and line.endswith("[FM606]")
    fixed = _default_with(**P5_1024)
    assert subnet_demand(fixed).fits


def test_node_subnets_without_prefixes_count_every_address() -> None:
    # 400 x p5 at a plain count (the VPC CNI's ENIs) outgrow the private subnet, not a /16
    profile = _default_with(instance_count=400)
    demand = subnet_demand(profile, networking=PodNetworking.NODE_SUBNET)
    assert demand.node_subnets and not demand.node_subnets[0].prefix_delegation
    part = demand.node_subnets[0].parts[0]
    (group,) = [g for g in demand.node_groups if g.name == "pretraining"]
    assert part.worst_case == part.addresses == part.nodes * group.addressing.per_node


def test_custom_networking_never_spills_into_node_subnets() -> None:
    profile = _default_with(instance_type="p5en.48xlarge", instance_count=1024)
    demand = subnet_demand(profile, networking=PodNetworking.CUSTOM_NETWORKING)
    assert demand.node_subnets == ()


@pytest.mark.parametrize(
    ("vpc_cidr", "avoid", "blocks"),
    [
        ("10.0.0.0/16", ("100.64.0.0/16",), ("10.1.0.0/16", "10.2.0.0/16")),
        # a primary in 10.0.0.0/15 may not take 10.0.0.0/16
        ("10.1.0.0/16", (), ("10.2.0.0/16", "10.3.0.0/16")),
        ("10.255.0.0/16", (), ("10.0.0.0/16", "10.1.0.0/16")),
        ("10.0.0.0/20", (), ("10.1.0.0/16", "10.2.0.0/16")),
        ("172.31.0.0/16", (), ("172.16.0.0/16", "172.17.0.0/16")),
        # 192.168.0.0/16 has no other /16: shared address space, past the pod CIDR
        ("192.168.0.0/16", ("100.64.0.0/16",), ("100.65.0.0/16", "100.66.0.0/16")),
    ],
)
def test_node_blocks_come_from_the_primary_range_then_shared_address_space(
    vpc_cidr: str, avoid: tuple[str, ...], blocks: tuple[str, ...]
) -> None:
    assert node_cidr_blocks(vpc_cidr, 2, avoid=avoid) == blocks


def test_pod_subnet_shortfall_names_the_numbers_and_the_fix() -> None:
    profile = _default_with(
        instance_type="p5en.48xlarge", instance_count=1024, max_pods_per_node=64
    )
    demand = subnet_demand(profile, networking=PodNetworking.CUSTOM_NETWORKING)
    problems = [f.line() for f in demand_problems(demand, profile.platform.vpc_cidr)]
    assert any(
        p.startswith("platform.pod_cidr: the pod subnet 100.64.0.0/16")
        and "max_pods_per_node" in p
        and p.endswith("[FM604]")
        for p in problems
    ), problems


def test_prefix_delegation_in_the_node_subnet() -> None:
    env = vpc_cni_environment(PodNetworking.PREFIX_DELEGATION)
    assert env == {"ENABLE_PREFIX_DELEGATION": "true", "WARM_PREFIX_TARGET": "1"}
    assert set(env) <= set(vpc_cni_crds()["env"])
    # p5.48xlarge: only the primary ENI on card 0, whose 49 slots hold 3 prefixes for 32 pods
    p5 = node_subnet_prefix_addressing(get_instance_type("p5.48xlarge"), EfaLayout.EFA_ONLY, 32)
    assert (p5.enis, p5.prefixes, p5.attached_enis, p5.addresses) == (1, 3, 1, 48)
    assert p5.fits_node


def test_prefix_delegation_gives_every_admitted_pod_an_address() -> None:
    profile = dataclasses.replace(
        load_profile(ROOT / "config" / "default.toml"),
    )
    platform = dataclasses.replace(profile.platform, pod_networking=PodNetworking.PREFIX_DELEGATION)
    demand = subnet_demand(dataclasses.replace(profile, platform=platform))
    assert demand.networking is PodNetworking.PREFIX_DELEGATION and demand.fits
    (group,) = [g for g in demand.node_groups if g.name == "pretraining"]
    # without prefixes kubelet admits 100 pods on p5 and the CNI addresses 49 (E17)
    plain = {g.name: g for g in subnet_demand(profile).node_groups}["pretraining"]
    assert plain.addressing.pods_without_address > 0
    assert group.addressing.kubelet_max_pods == 32
    assert group.addressing.pods_without_address == 0
    assert group.addressing.per_node == 1 + 48
    options = deployment_options(dataclasses.replace(profile, platform=platform))
    assert options.prefix_delegation and not options.custom_networking
    assert options.workloads["pretraining"].max_pods_per_node == 32


@pytest.mark.parametrize(
    ("block", "vpc_cidr", "fragment"),
    [
        # Amazon VPC User Guide, "IPv4 CIDR block association restrictions".
        ("192.168.0.0/16", "10.0.0.0/16", "another RFC 1918 range (192.168.0.0/16)"),
        ("172.16.0.0/16", "10.0.0.0/16", "another RFC 1918 range (172.16.0.0/12)"),
        ("10.1.0.0/16", "172.16.0.0/16", "another RFC 1918 range (10.0.0.0/8)"),
        ("10.1.0.0/16", "100.64.0.0/16", "in no RFC 1918 range"),
        ("10.0.0.0/16", "10.1.0.0/16", "10.0.0.0/15"),
        ("198.19.0.0/16", "10.0.0.0/16", "198.19.0.0/16"),
        ("100.64.0.0/16", "10.0.0.0/16", None),
        ("10.5.0.0/16", "10.0.0.0/16", None),
        ("172.20.0.0/16", "172.16.0.0/16", None),
        ("192.168.16.0/20", "192.168.0.0/20", None),
    ],
)
def test_secondary_block_restrictions(block: str, vpc_cidr: str, fragment: str | None) -> None:
    """One rule for the pod CIDR and the node blocks; node_cidr_blocks never picks a block
    the rule refuses."""
    problems = secondary_block_problems(block, vpc_cidr)
    if fragment is None:
        assert problems == []
    else:
        assert any(fragment in p for p in problems), problems
    for chosen in node_cidr_blocks(vpc_cidr, 4):
        assert secondary_block_problems(chosen, vpc_cidr) == []


def test_the_subnet_rules_report_the_pod_cidr_problems_the_plan_found() -> None:
    """A bad pod CIDR under custom networking is reported once, from the plan's own
    ``pod_cidr_problems``: the findings of the pod CIDR rule under ``platform.pod_cidr``."""
    profile = load_profile(ROOT / "config" / "default.toml")
    platform = dataclasses.replace(profile.platform, pod_cidr="10.0.128.0/17")
    bad = dataclasses.replace(profile, platform=platform)
    demand = subnet_demand(bad, networking=PodNetworking.CUSTOM_NETWORKING)
    refused = secondary_block_problems("10.0.128.0/17", "10.0.0.0/16")
    assert demand.pod_cidr_problems == tuple(refused)
    expected = scale_rules.pod_cidr("10.0.128.0/17", "10.0.0.0/16", key="platform.pod_cidr")
    assert expected and {f.code for f in expected} == {"FM601"}
    found = demand_problems(demand, platform.vpc_cidr)
    assert found[: len(expected)] == expected
