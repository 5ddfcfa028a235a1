"""The EKS metrics sources: schema-valid objects on every node they belong on, the counters
script in a simulated node, and series the scraper keeps and the rules read."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from fm_constructs import pins
from fm_constructs.kubernetes import efa_exporter
from fm_constructs.observability import data, promql
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration import eks_metrics_sources as sources
from tests.kubernetes_schemas import assert_valid

SCRIPT = Path(sources.__file__).parent / "metrics_scripts" / sources.COUNTERS_SCRIPT


def efa_objects() -> list[dict[str, Any]]:
    """The EFA exporter's objects as the metrics sources apply them."""
    return efa_exporter.efa_exporter_manifests(
        script=sources.counters_script(), node_selector=sources.EFA_NODES
    )


SCRAPE = yaml.safe_load(
    data.render_scrape_configuration(
        data.EKS_SCRAPE_TEMPLATE.read_text(), cluster_name="c", scrape_interval_seconds=30
    )
)
KEEP = promql.collected_metric_patterns(SCRAPE)


def _daemon_set() -> dict:
    (daemon_set,) = [o for o in efa_objects() if o["kind"] == "DaemonSet"]
    return daemon_set


@pytest.mark.parametrize("version", sorted(pins.kubernetes().versions))
def test_manifests_match_their_schemas(version: str) -> None:
    assert set(assert_valid(efa_objects(), kubernetes_version=version)) == {"builtin"}


def test_node_level_exporters_tolerate_every_taint_and_listen_where_the_scraper_looks() -> None:
    pod = _daemon_set()["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"operator": "Exists"}]
    assert pod["hostNetwork"] is True
    assert pod["nodeSelector"] == {charts.EFA_PRESENT_LABEL: "true"}
    (exporter,) = [c for c in pod["containers"] if c["name"] == "node-exporter"]
    assert exporter["image"] == pins.image("node-exporter").reference
    assert f"--web.listen-address=:{efa_exporter.EFA_EXPORTER_PORT}" in exporter["args"]
    node_exporter = sources.node_exporter_values()
    assert node_exporter["tolerations"] == [{"operator": "Exists"}]
    assert node_exporter["hostNetwork"] is True
    assert charts.dcgm_exporter_values()["hostNetwork"] is True
    ports = {
        job["job_name"]: r["replacement"]
        for job in SCRAPE["scrape_configs"]
        for r in job["relabel_configs"]
        if r.get("target_label") == "__address__" and "replacement" in r
    }
    assert ports["efa-exporter"] == f"$1:{efa_exporter.EFA_EXPORTER_PORT}"
    assert ports["node-exporter"] == f"$1:{sources.NODE_EXPORTER_PORT}"


def test_kube_state_metrics_exports_the_workload_label_the_rules_join_on() -> None:
    values = sources.kube_state_metrics_values()
    assert values["metricLabelsAllowlist"] == ["nodes=[fm-constructs/workload]"]
    recording = (data.RULES_DIR / "recording.yaml").read_text()
    assert '"label_fm_constructs_workload"' in recording
    (job,) = [j for j in SCRAPE["scrape_configs"] if j["job_name"] == "kube-state-metrics"]
    ports = [r["regex"] for r in job["relabel_configs"] if "port_number" in str(r["source_labels"])]
    assert ports == [str(values["service"]["port"])]
    assert promql.is_collected("kube_node_labels", KEEP)


def test_charts_are_pinned() -> None:
    for spec, pin in (
        (sources.NODE_EXPORTER, "prometheus-node-exporter"),
        (sources.KUBE_STATE_METRICS, "kube-state-metrics"),
    ):
        assert spec.version == pins.chart(pin).version and spec.namespace == sources.NAMESPACE


def test_the_configmap_ships_the_packaged_script() -> None:
    (config_map,) = [o for o in efa_objects() if o["kind"] == "ConfigMap"]
    assert config_map["data"][sources.COUNTERS_SCRIPT] == SCRIPT.read_text()


def test_counters_script_is_shellcheck_clean() -> None:
    shellcheck = shutil.which("shellcheck") or str(Path(os.sys.executable).parent / "shellcheck")
    result = subprocess.run(
        [shellcheck, "--shell=sh", str(SCRIPT)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout


def _simulated_node(root: Path, *, lustre: str | None) -> dict[str, str]:
    for device in ("rdmap16s27", "rdmap32s27"):
        counters = root / "sys/class/infiniband" / device / "ports/1/hw_counters"
        counters.mkdir(parents=True)
        for name, value in (
            ("tx_bytes", "1000"),
            ("rx_bytes", "2000"),
            ("rdma_read_wr_err", "0"),
            ("rdma_write_wr_err", "1"),
            ("rx_drops", "3"),
            ("lifespan", "12"),
            ("retrans_pkts", "7"),
        ):
            (counters / name).write_text(value + "\n")
    if lustre == "procfs":
        stats = root / "proc/fs/lustre/llite/abcdefgh-ffff9a3c4d5e6000/stats"
    elif lustre == "debugfs":
        stats = root / "sys/kernel/debug/lustre/llite/abcdefgh-ffff9a3c4d5e6000/stats"
    else:
        stats = None
    if stats is not None:
        stats.parent.mkdir(parents=True)
        stats.write_text(
            "snapshot_time             1700000000.123456789 secs.nsecs\n"
            "read_bytes                12 samples [bytes] 4096 1048576 5000000 99999999\n"
            "write_bytes               34 samples [bytes] 4096 1048576 7000000 99999999\n"
            "open                      56 samples [usecs] 10 500 2800 99999\n"
            "getattr                   78 samples [usecs] 1 20 390 9999\n"
        )
    (root / "proc").mkdir(exist_ok=True)
    out = root / "out"
    return {
        "SYSFS": str(root / "sys"),
        "PROCFS": str(root / "proc"),
        "OUT": str(out),
        "INTERVAL": "0",
        "PATH": os.environ["PATH"],
    }


def _run(env: dict[str, str]) -> str:
    subprocess.run(["sh", str(SCRIPT)], env=env, check=True, capture_output=True, text=True)
    return (Path(env["OUT"]) / "node_counters.prom").read_text()


@pytest.mark.parametrize("lustre", ["procfs", "debugfs", None])
def test_counters_script_in_a_simulated_node(tmp_path: Path, lustre: str | None) -> None:
    text = _run(_simulated_node(tmp_path, lustre=lustre))
    samples = dict(
        line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#")
    )
    assert samples['node_amazonefa_tx_bytes{device="rdmap16s27",port="1"}'] == "1000"
    assert samples['node_amazonefa_rdma_write_wr_err{device="rdmap32s27",port="1"}'] == "1"
    assert "# TYPE node_amazonefa_lifespan gauge" in text
    assert "# TYPE node_amazonefa_rx_drops counter" in text
    if lustre:
        assert samples['fm_lustre_client_read_bytes_total{fs="abcdefgh"}'] == "5000000"
        assert samples['fm_lustre_client_operations_total{fs="abcdefgh",operation="open"}'] == "56"
        assert float(
            samples['fm_lustre_client_operation_seconds_total{fs="abcdefgh",operation="getattr"}']
        ) == pytest.approx(0.00039)
    else:
        assert "fm_lustre" not in text
    # Every series the rules and dashboards read from this exporter is kept by the scraper.
    names = {re.sub(r"\{.*", "", key) for key in samples}
    kept = {n for n in names if promql.is_collected(n, {"efa": KEEP["efa-exporter"]})}
    assert {"node_amazonefa_tx_bytes", "node_amazonefa_rdma_write_wr_err"} <= kept
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["node_counters.prom"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_counters_output_parses_as_prometheus_text(tmp_path: Path) -> None:
    text = _run(_simulated_node(tmp_path, lustre="procfs"))
    result = subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, check=False
    )
    # The EFA names are the amazonefa collector's (no _total suffix): that lint is expected,
    # any parse error or other lint is not.
    problems = [
        line
        for line in (result.stdout + result.stderr).splitlines()
        if line.strip() and 'counter metrics should have "_total" suffix' not in line
    ]
    assert problems == []


def test_counters_container_runs_as_root_without_capabilities_on_read_only_host_paths() -> None:
    """uid 0 (the debugfs root is 0700 root), every capability dropped, nothing else."""
    pod = _daemon_set()["spec"]["template"]["spec"]
    for key in ("hostPID", "hostIPC"):
        assert not pod.get(key), key
    containers = {c["name"]: c for c in pod["containers"]}
    counters = containers["counters"]["securityContext"]
    assert counters["runAsUser"] == 0
    assert counters["capabilities"] == {"drop": ["ALL"]}
    assert counters["allowPrivilegeEscalation"] is False
    assert counters["privileged"] is False
    assert counters["readOnlyRootFilesystem"] is True
    exporter = containers["node-exporter"]["securityContext"]
    assert exporter["runAsUser"] == 65534 and exporter["runAsNonRoot"] is True
    assert exporter["capabilities"] == {"drop": ["ALL"]}
    host = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert host == dict(efa_exporter.HOST_PATHS)
    for container in containers.values():
        for mount in container["volumeMounts"]:
            if mount["name"] in host:
                assert container["name"] == "counters"
                assert mount["readOnly"] is True
                # The script's SYSFS prefix maps each host path to the same place below it.
                assert mount["mountPath"] == efa_exporter.HOST_SYSFS + host[mount["name"]][4:]
    (debugfs,) = [m for m in containers["counters"]["volumeMounts"] if m["name"] == "debugfs"]
    assert debugfs["recursiveReadOnly"] == "IfPossible"
    env = {e["name"]: e["value"] for e in containers["counters"]["env"]}
    assert env["SYSFS"] == efa_exporter.HOST_SYSFS
    # Everything the script reads below SYSFS is under a mounted host path.
    script = SCRIPT.read_text()
    read = set(re.findall(r'"\$SYSFS"/([a-z]+/[a-z]+)', script))
    assert read == {"class/infiniband", "kernel/debug"}, read
    assert all(any(f"/sys/{r}".startswith(p) for _, p in efa_exporter.HOST_PATHS) for r in read)


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv (util-linux) to run the script as uid 0 without capabilities "
    "and as uid 65534",
)
def test_lustre_stats_in_a_root_only_debugfs_need_uid_0_and_no_capability() -> None:
    """The simulated node's debugfs is 0700 root like the kernel's: uid 0 with an empty
    capability set reads the llite stats, uid 65534 (the old securityContext) reads none."""
    # Below /tmp itself: the other user must reach the simulated node.
    root = Path(tempfile.mkdtemp(prefix="fm-counters-", dir="/tmp"))
    try:
        root.chmod(0o755)
        env = _simulated_node(root, lustre="debugfs")
        (root / "sys/kernel/debug").chmod(0o700)
        script = root / "node_counters.sh"
        shutil.copy(SCRIPT, script)
        Path(env["OUT"]).mkdir(mode=0o777)
        Path(env["OUT"]).chmod(0o777)
        no_caps = [
            "setpriv",
            "--securebits=+noroot,+noroot_locked,+no_setuid_fixup",
            "--bounding-set=-all",
            "--inh-caps=-all",
        ]
        status = subprocess.run(
            [*no_caps, "grep", "^CapEff", "/proc/self/status"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert status.split()[1] == "0000000000000000", status
        for who, expect_lustre in (
            (no_caps, True),
            (["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"], False),
        ):
            subprocess.run([*who, "sh", str(script)], env=env, check=True, capture_output=True)
            text = (Path(env["OUT"]) / "node_counters.prom").read_text()
            assert ('fm_lustre_client_read_bytes_total{fs="abcdefgh"} 5000000' in text) is (
                expect_lustre
            ), who
            assert 'node_amazonefa_tx_bytes{device="rdmap16s27",port="1"} 1000' in text
    finally:
        shutil.rmtree(root)
