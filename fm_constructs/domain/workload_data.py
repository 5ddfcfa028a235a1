"""What each workload kind reads, writes and needs installed: one home per fact.

The profile's options, the workload patterns, the storage associations and the stacks read
these, so the prefixes a role may write are the prefixes a file system exports.
"""

from __future__ import annotations

#: Kubernetes operators (Helm releases) each workload kind needs: Kueue and Kubeflow Trainer for
#: training jobs, KubeRay for RL post-training, LeaderWorkerSet for multi-node serving.
OPERATORS: dict[str, frozenset[str]] = {
    "pretraining": frozenset({"kueue", "kubeflow_trainer"}),
    "post_training": frozenset({"kueue", "kubeflow_trainer", "kuberay"}),
    "inference": frozenset({"kueue", "leader_worker_set"}),
}

#: Data-bucket prefixes each workload kind writes: its own outputs, read, written and deleted
#: through its service account and exported from its file system. No workload writes
#: ``models/`` (the weights the model server loads at every start): whoever publishes a model
#: copies it there with their own rights.
DATA_OUTPUTS: dict[str, tuple[str, ...]] = {
    "pretraining": ("checkpoints/pretraining/",),
    "post_training": ("checkpoints/post-training/",),
    "inference": (),
}
#: Data-bucket prefixes each workload kind only reads: datasets, another workload's
#: checkpoints (post-training starts from pre-training's), the served models.
DATA_INPUTS: dict[str, tuple[str, ...]] = {
    "pretraining": ("datasets/",),
    "post_training": ("datasets/", "checkpoints/pretraining/"),
    "inference": ("models/",),
}
#: Every prefix each workload kind reaches (inputs then outputs).
DATA_PREFIXES: dict[str, tuple[str, ...]] = {
    kind: DATA_INPUTS[kind] + DATA_OUTPUTS[kind] for kind in DATA_INPUTS
}


#: Each workload kind's file-system directories and the data-bucket prefix each links to:
#: its outputs at ``/checkpoints`` (imported and exported), its inputs elsewhere (imported
#: only, so nothing written on Lustre reaches another workload's prefix or ``models/``).
FSX_DIRECTORIES: dict[str, tuple[tuple[str, str], ...]] = {
    "pretraining": (("/datasets", "datasets/"), ("/checkpoints", "checkpoints/pretraining/")),
    "post_training": (
        ("/datasets", "datasets/"),
        ("/checkpoints", "checkpoints/post-training/"),
        ("/pretraining-checkpoints", "checkpoints/pretraining/"),
    ),
    "inference": (("/models", "models/"),),
}
