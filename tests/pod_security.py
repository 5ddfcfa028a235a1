"""The Pod Security Standards' ``baseline`` checks, for tests of rendered pod templates.

Transcribed from the Kubernetes documentation, "Pod Security Standards" (Baseline profile,
kubernetes/website content/en/docs/concepts/security/pod-security-standards.md): host
namespaces, privileged containers, capabilities beyond the default set, hostPath volumes, host
ports, AppArmor, SELinux, /proc mount type, seccomp and sysctls. ``privileged`` allows
everything. :func:`pod_specs` finds every pod spec embedded in an object (Deployments, Jobs,
JobSets, TrainingRuntimes, LeaderWorkerSets: any mapping with ``containers``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

#: Capabilities a baseline container may add.
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
SELINUX_TYPES = frozenset(
    {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)


def pod_specs(node: Any) -> Iterator[Mapping[str, Any]]:
    """Every pod spec (a mapping with ``containers``) inside ``node``."""
    if isinstance(node, Mapping):
        if isinstance(node.get("containers"), list):
            yield node
        for value in node.values():
            yield from pod_specs(value)
    elif isinstance(node, list):
        for value in node:
            yield from pod_specs(value)


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("containers", "initContainers", "ephemeralContainers"):
        yield from spec.get(key) or []


def baseline_violations(spec: Mapping[str, Any]) -> list[str]:
    """What in pod ``spec`` the baseline level forbids (empty: admitted)."""
    found: list[str] = []
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            found.append(f"{key}: true")
    for volume in spec.get("volumes") or []:
        if "hostPath" in volume:
            found.append(f"hostPath volume {volume.get('name')}")
    contexts = [("pod", spec.get("securityContext") or {})]
    for sysctl in (spec.get("securityContext") or {}).get("sysctls") or []:
        if sysctl.get("name") not in SAFE_SYSCTLS:
            found.append(f"sysctl {sysctl.get('name')}")
    for container in _containers(spec):
        name = container.get("name")
        context = container.get("securityContext") or {}
        contexts.append((f"container {name}", context))
        if context.get("privileged"):
            found.append(f"container {name}: privileged")
        added = set((context.get("capabilities") or {}).get("add") or [])
        if added - BASELINE_CAPABILITIES:
            found.append(f"container {name}: capabilities {sorted(added - BASELINE_CAPABILITIES)}")
        if context.get("procMount") not in (None, "Default"):
            found.append(f"container {name}: procMount {context['procMount']}")
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                found.append(f"container {name}: hostPort {port['hostPort']}")
        if (context.get("windowsOptions") or {}).get("hostProcess"):
            found.append(f"container {name}: hostProcess")
    for where, context in contexts:
        if (context.get("seccompProfile") or {}).get("type") == "Unconfined":
            found.append(f"{where}: seccomp Unconfined")
        if (context.get("appArmorProfile") or {}).get("type") == "Unconfined":
            found.append(f"{where}: AppArmor Unconfined")
        selinux = context.get("seLinuxOptions") or {}
        if (
            selinux.get("type", "") not in SELINUX_TYPES
            or selinux.get("user")
            or selinux.get("role")
        ):
            found.append(f"{where}: seLinuxOptions {selinux}")
    return found


def violations(spec: Mapping[str, Any], level: str) -> list[str]:
    """What ``level`` (``privileged`` or ``baseline``) forbids in ``spec``."""
    if level == "privileged":
        return []
    if level == "baseline":
        return baseline_violations(spec)
    raise ValueError(f"level {level!r} is not checked here")
