"""Pure renderers of Kubernetes objects (plain dicts, no aws_cdk import).

Every Kubernetes object the library applies is rendered here, one module per concern:
:mod:`.images` (pinned images with their sources), :mod:`.node_shape` (what one pod may claim
of an accelerated node, and the NCCL/EFA environment), :mod:`.training_runtimes` (Kubeflow
Trainer runtimes per workload), :mod:`.jobs` (nccl-tests, the DCGM health check and the first
training job), :mod:`.kueue` (ResourceFlavors, ClusterQueues, LocalQueues, the controller
configuration), :mod:`.workload` (a workload's namespaces and service account),
:mod:`.network_policy`, :mod:`.model_server` (vLLM Deployment or LeaderWorkerSet, Service,
KEDA scaling), :mod:`.lustre_volume` (FSx CSI static volume and claim), :mod:`.efa_exporter`,
:mod:`.hyperpod` (health monitoring agent, HyperPod controllers' access),
:mod:`.scraper_access` (the managed scraper's RBAC), :mod:`.eni_config`, :mod:`.mpi_ssh`, and
:mod:`.objects` (plain namespace, service account, cluster role and binding). The constructs
apply these objects with the cluster's kubectl provider; ``fmc validate`` renders the same
objects for ``kubectl``.
"""

from fm_constructs.kubernetes.kueue import (
    API_VERSION as KUEUE_API_VERSION,
)
from fm_constructs.kubernetes.kueue import (
    Flavor,
    QueueFlavor,
    cluster_queue,
    local_queue,
    resource_flavor,
    topology,
)
from fm_constructs.kubernetes.objects import service_account
from fm_constructs.kubernetes.workload import (
    namespace,
    namespace_network_policies,
    namespace_objects,
)

__all__ = [
    "KUEUE_API_VERSION",
    "Flavor",
    "QueueFlavor",
    "cluster_queue",
    "local_queue",
    "namespace",
    "namespace_network_policies",
    "namespace_objects",
    "resource_flavor",
    "service_account",
    "topology",
]
