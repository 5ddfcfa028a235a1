"""Former home of the Slurm node scripts, which HyperPod and PCS share from
:mod:`fm_constructs.orchestration.slurm` (``node_scripts/``); their Python modules are still
importable from here."""

from fm_constructs.orchestration.slurm.node_scripts import (
    dcgm_counters,
    prometheus_agent_config,
    slurm_config,
)

__all__ = ["dcgm_counters", "prometheus_agent_config", "slurm_config"]
