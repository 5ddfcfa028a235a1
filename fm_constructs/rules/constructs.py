"""The codes of the argument checks of each construct and building block.

A construct checks its own arguments where it is built and reports them under its class and
construct path; every problem of one construct (or planning function) carries that
construct's code, listed with its fix in docs/reference/errors.md, so a user calling the
library looks up one code per construct instead of a generic one. Rules shared with the
profile (a Kubernetes version, a serving layout, a region) keep their own codes.

:func:`fm_constructs.errors.Problems.of` gives a construct's problems the code its class
declares (``problem_code = codes.VPC``); the functions and classmethods that are not
constructs name their code where they collect problems.
"""

from __future__ import annotations

from fm_constructs.errors import GENERIC_CODE
from fm_constructs.planning.efa_layout import EFA_LAYOUT_CODE
from fm_constructs.planning.fsx_sizing import FSX_SIZING_CODE
from fm_constructs.planning.ip_budget import IP_BUDGET_CODE
from fm_constructs.rules.findings import info

GENERIC = info(
    GENERIC_CODE,
    "An argument breaks a requirement of the construct or function it is passed to.",
    "Change the argument as the message says.",
)

_FIX = "Change the argument as the message says (the message names it and the allowed values)."

VPC = info(
    "FM801",
    "A GpuClusterVpc argument is invalid (zones: a list of one region's zone names; CIDR "
    "blocks, subnets).",
    _FIX,
)
CAPACITY_SOURCE = info(
    "FM811",
    "A CapacitySource does not match its kind (identifiers, times, a training plan outside "
    "HyperPod).",
    "Give the identifiers the capacity kind needs and nothing else, as the message says.",
)
CAPACITY_RESERVATION = info(
    "FM812", "An OnDemandCapacityReservation argument is invalid (count, zone, dates).", _FIX
)
LAUNCH_TEMPLATE = info(
    "FM813",
    "A GpuLaunchTemplate argument is invalid (instance type, root volume, IMDS, user data).",
    _FIX,
)
EFA_LAYOUT = info(
    EFA_LAYOUT_CODE,
    "The EFA interface layout does not fit the instance type's network cards.",
    "Use the instance type's own layout (efa_layout 'efa-only' or 'legacy' as the message says).",
)
IP_BUDGET = info(
    IP_BUDGET_CODE,
    "An IP budget argument is invalid, or the subnet cannot hold the nodes' addresses.",
    "Give a larger subnet or fewer nodes, as the message says.",
)
DATA_BUCKET = info(
    "FM821", "A DataBucket argument is invalid (name, prefixes, lifecycle, imported ARN).", _FIX
)
LUSTRE = info(
    "FM822",
    "A LustreFileSystem argument is invalid (capacity, throughput, data repository "
    "associations, mount options, an imported file system's attributes).",
    _FIX,
)
FSX_SIZING = info(
    FSX_SIZING_CODE,
    "An FsxSizingRequest is invalid (sizes, times and counts must be positive).",
    "Give positive sizes and times, or explicit capacity and throughput instead.",
)
EKS_CLUSTER = info(
    "FM831",
    "A GpuEksCluster argument is invalid (admins, endpoint access, a VPC of one zone, an "
    "imported cluster's attributes, a Lustre volume, training runtimes).",
    _FIX,
)
NODE_GROUP = info(
    "FM832",
    "An EfaNodeGroup argument is invalid (sizes, capacity, labels, taints, launch template).",
    _FIX,
)
ADDONS = info("FM833", "A ClusterAddons argument is invalid (add-on names, versions).", _FIX)
AUTOSCALER = info(
    "FM834",
    "A ClusterAutoscaler argument is invalid, or a node group is enabled twice or without "
    "room to scale.",
    _FIX,
)
HYPERPOD_CLUSTER = info(
    "FM841",
    "A HyperPodCluster argument is invalid (instance groups, names, counts, an imported "
    "cluster's attributes).",
    _FIX,
)
HYPERPOD_WORKLOAD = info(
    "FM844",
    "A HyperPodAcceleratedWorkload argument is invalid (an instance type it cannot look up).",
    _FIX,
)
HYPERPOD_EKS = info(
    "FM842", "A HyperPodEksDependencies argument is invalid (cluster, namespace, roles).", _FIX
)
PCS = info(
    "FM843",
    "An AWS PCS construct argument is invalid (cluster size, node counts, purchase option, "
    "AMI, an imported resource's attributes).",
    _FIX,
)
PROMETHEUS = info("FM851", "A PrometheusWorkspace argument is invalid (alias, retention).", _FIX)
SCRAPER = info("FM852", "A ManagedScraper argument is invalid (cluster, interval, jobs).", _FIX)
ALERT_RULES = info(
    "FM853", "An AlertRules argument is invalid (rule names, thresholds, groups).", _FIX
)
GRAFANA = info("FM854", "A GrafanaWorkspace argument is invalid (authentication, name).", _FIX)
DASHBOARDS = info("FM855", "A GrafanaDashboards argument is invalid (dashboard files).", _FIX)
FSX_ALARMS = info(
    "FM856", "An FsxLustreAlarms argument is invalid (thresholds, periods, topic).", _FIX
)
OBSERVABILITY_DATA = info(
    "FM857",
    "A shipped or given observability data file (rule thresholds, dashboards, metric "
    "inventory) is malformed.",
    "Fix the file at the key the message names.",
)
EKS_WORKLOAD = info(
    "FM861",
    "An EksWorkload argument is invalid (name, node pools, data prefixes, a second file system).",
    _FIX,
)
INFERENCE_SERVICE = info(
    "FM862",
    "An InferenceService argument is invalid (model server, load balancer, autoscaling, "
    "node group).",
    _FIX,
)
MODEL_SERVER = info(
    "FM863",
    "A ModelServerSpec or AutoscalingPolicy field is invalid (replicas, image, port, "
    "memory share, extra arguments, scaling bounds).",
    _FIX,
)
