"""A consumer app of `make bench`: one GPU EKS cluster with N EFA node groups.

    cdk synth --app "python tools/node_groups_app.py" -c node_groups=16

`make bench` synthesizes it with 1 and with 16 groups: what the 15 extra groups cost, against the
one-group app, is the price of each node group a consumer adds (no profile, no pattern: the
building blocks alone).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stacks.runtime import prefer_venv_node

prefer_venv_node()

import aws_cdk as cdk  # noqa: E402

from fm_constructs.compute import CapacitySource  # noqa: E402
from fm_constructs.network import GpuClusterVpc  # noqa: E402
from fm_constructs.orchestration import EfaNodeGroup, GpuEksCluster  # noqa: E402

ZONE = "us-east-1a"


def build(app: cdk.App, node_groups: int) -> cdk.Stack:
    """A VPC, a GPU EKS cluster and ``node_groups`` two-node p5 groups in one stack."""
    stack = cdk.Stack(app, "bench-node-groups", env=cdk.Environment(region="us-east-1"))
    network = GpuClusterVpc(
        stack, "Network", availability_zones=[ZONE, "us-east-1b"], nat_gateways_per_az=False
    )
    cluster = GpuEksCluster(stack, "Cluster", vpc=network.vpc, gpu_availability_zone=ZONE)
    cdk.Annotations.of(cluster).acknowledge_warning(
        "fm:no-cluster-admins", "a benchmark app: nobody uses its Kubernetes API"
    )
    subnet = network.private_subnet(ZONE)
    for index in range(node_groups):
        EfaNodeGroup(
            stack,
            f"GpuNodes{index}",
            cluster=cluster,
            instance_type="p5.48xlarge",
            subnet=subnet,
            node_count=2,
            capacity=CapacitySource.on_demand(),
        )
    return stack


def main() -> None:
    app = cdk.App()
    build(app, int(app.node.try_get_context("node_groups") or 1))
    app.synth()


if __name__ == "__main__":
    main()
