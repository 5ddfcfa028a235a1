"""Pre-training and inference on one shared GPU EKS cluster, one statement per workload.

The cluster and data live in a platform stack; each workload stack holds only its own node
groups, namespace, Pod Identity role, FSx claim and Kueue queue. cdk-nag checks the result.

    pip install -r requirements.txt
    cdk synth            # or: python app.py
"""

from __future__ import annotations

import aws_cdk as cdk

from fm_constructs.network import GpuClusterVpc
from fm_constructs.orchestration import GpuEksCluster
from fm_constructs.patterns import InferenceWorkload, ModelServerSpec, PretrainingWorkload
from fm_constructs.policy import enable_nag
from fm_constructs.storage import DataBucket, LustreFileSystem

ENV = cdk.Environment(region="us-east-1")
ZONE = "us-east-1a"

app = cdk.App()
platform = cdk.Stack(app, "team-platform", env=ENV)
network = GpuClusterVpc(platform, "Network", availability_zones=[ZONE, "us-east-1b"])
subnet = network.private_subnet(ZONE)
data = DataBucket(platform, "Data")
scratch = LustreFileSystem(platform, "Scratch", vpc=network.vpc, subnet=subnet, data_bucket=data)
cluster = GpuEksCluster(platform, "Cluster", vpc=network.vpc, gpu_availability_zone=ZONE)

PretrainingWorkload(
    cdk.Stack(app, "team-pretraining", env=ENV),
    "Pretraining",
    cluster=cluster,
    subnet=subnet,
    instance_type="p5.48xlarge",
    node_count=2,
    data_bucket=data,
    file_system=scratch,
)
InferenceWorkload(
    cdk.Stack(app, "team-inference", env=ENV),
    "Inference",
    cluster=cluster,
    subnet=subnet,
    instance_type="g6e.48xlarge",
    node_count=1,
    max_node_count=2,
    data_bucket=data,
    model=ModelServerSpec(model_s3_prefix="models/qwen3-32b/", served_model_name="qwen3-32b"),
)
enable_nag(app)
app.synth()
