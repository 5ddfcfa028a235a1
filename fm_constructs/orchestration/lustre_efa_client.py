"""LNet over EFA on EKS nodes that mount an EFA-enabled FSx for Lustre file system.

The FSx CSI driver mounts the file system by its TCP NID; the traffic moves onto EFA only when
LNet already has an ``efa`` network, discovery on and EFA preferred (FSx for Lustre guide,
"Configuring EFA clients"), and LNet configured after a mount leaves that mount on TCP. So the
nodes' launch-template user data gets one more ``text/x-shellscript`` part
(:func:`setup_script`), which installs and starts ``fm-lnet-efa.service``. The unit is ordered
before ``nodeadm-run.service`` and ``kubelet.service`` (:data:`LNET_UNIT_TEMPLATE`), so at every
boot LNet is on EFA before kubelet starts a pod. It runs ``lnet_efa_boot.sh``
(:func:`~fm_constructs.compute.user_data.lnet_efa_boot_script`: the Lustre client when the AMI
lacks it, the checks for EFA devices and the EFA LND), which runs ``fm-lnet-efa``: the same
``lnet_efa.sh`` HyperPod and PCS nodes run (read from the Slurm node scripts, not copied), with
the FSx guide's interface count for the type within the node's share of the file system's EFA
connections (:func:`~fm_constructs.orchestration.pcs.user_data.lnet_efa_interfaces`, the count
PCS nodes use).
"""

from __future__ import annotations

from fm_constructs.compute.user_data import boot_unit_setup, lnet_efa_boot_script
from fm_constructs.orchestration.slurm.parameters import scripts_directory

#: Where the node keeps the scripts (fm-lnet-efa is where mount_fsx.sh installs it too).
LNET_SCRIPT_PATH = "/usr/local/sbin/fm-lnet-efa"
BOOT_SCRIPT_PATH = "/usr/local/sbin/fm-lnet-efa-boot"
LNET_UNIT = "fm-lnet-efa.service"
#: The unit's template among the node scripts, ordered before nodeadm-run.service and
#: kubelet.service: nodeadm-run.service runs after cloud-final.service (where cloud-init runs
#: the user data's shell parts) and restarts kubelet.service (amazon-eks-ami:
#: templates/al2023/runtime/rootfs/etc/systemd/system/nodeadm-run.service,
#: nodeadm/internal/kubelet/daemon.go), so a unit ordered before both has run before kubelet
#: starts any pod, at every boot.
LNET_UNIT_TEMPLATE = "fm-lnet-efa-kubelet.service.in"


def lnet_efa_script() -> str:
    """The Slurm node scripts' ``lnet_efa.sh``, as HyperPod and PCS nodes run it."""
    return (scripts_directory() / "lnet_efa.sh").read_text()


def lnet_unit(instance_type: str, interfaces: int) -> str:
    """``fm-lnet-efa.service``: at every boot, after the network is online and before kubelet
    starts, LNet over ``interfaces`` EFA devices of an ``instance_type`` node. Installing the
    Lustre client may take minutes on the first boot. Rendered from the node scripts'
    :data:`LNET_UNIT_TEMPLATE`, which HyperPod EKS nodes render the same way
    (``lnet_efa_eks.sh``)."""
    template = (scripts_directory() / LNET_UNIT_TEMPLATE).read_text()
    return (
        template.replace("@BOOT_SCRIPT@", BOOT_SCRIPT_PATH)
        .replace("@INSTANCE_TYPE@", instance_type)
        .replace("@INTERFACES@", str(int(interfaces)))
    )


def setup_script(instance_type: str, interfaces: int) -> str:
    """The user-data shell part: ``fm-lnet-efa``, ``fm-lnet-efa-boot`` and their unit,
    enabled for every later boot and started now (cloud-init runs it before
    ``nodeadm-run.service``, so before kubelet)."""
    return "#!/bin/bash\nset -euo pipefail\n" + boot_unit_setup(
        comment=[
            f"LNet over EFA for FSx for Lustre before kubelet starts, at every boot by {LNET_UNIT}",
            f"({interfaces} EFA interfaces of this {instance_type} node).",
        ],
        scripts=[
            (LNET_SCRIPT_PATH, lnet_efa_script(), "FM_LNET_EFA_SCRIPT"),
            (BOOT_SCRIPT_PATH, lnet_efa_boot_script(), "FM_LNET_EFA_BOOT"),
        ],
        unit=(LNET_UNIT, lnet_unit(instance_type, interfaces), "FM_LNET_EFA_UNIT"),
    )
