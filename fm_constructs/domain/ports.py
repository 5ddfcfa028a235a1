"""The ports of the exporters, the model server and the job-metrics contract: defined once.

The node scripts, the Kubernetes manifests, the scraper's configuration, the security-group
rules and the network policies read these, so what is scraped is what listens.
"""

from __future__ import annotations

#: Prometheus node exporter (host network on every node).
NODE_EXPORTER_PORT = 9100
#: NVIDIA DCGM exporter (GPU telemetry, host network on NVIDIA nodes).
DCGM_EXPORTER_PORT = 9400
#: The EFA exporter: the node exporter image with the EFA counters (textfile or amazonefa).
EFA_EXPORTER_PORT = 9109
#: kube-state-metrics (EKS).
KUBE_STATE_METRICS_PORT = 8080
#: The Slurm exporter's default port on the controller (HyperPod Slurm).
SLURM_EXPORTER_PORT = 9341
#: The model server (vLLM): the port vLLM's LWS recipe uses; the scraper reaches it on GPU nodes.
MODEL_SERVER_PORT = 8080
#: Port every job serves its metrics on (the job-metrics contract): the OpenTelemetry
#: Prometheus exporter's registered default, distinct from the model server and the node
#: exporters so a job and a model server can share a node.
JOB_METRICS_PORT = 9464
#: The exporters listening on every accelerated node's host network (a pod may not take them).
NODE_EXPORTER_PORTS = (NODE_EXPORTER_PORT, EFA_EXPORTER_PORT, DCGM_EXPORTER_PORT)
