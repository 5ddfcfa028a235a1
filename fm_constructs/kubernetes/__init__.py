"""Pure renderers of Kubernetes objects (plain dicts, no aws_cdk import).

One module per concern: :mod:`.images` (pinned images with their sources), :mod:`.node_shape`
(what one pod may claim of an accelerated node, and the NCCL/EFA environment),
:mod:`.training_runtimes` (Kubeflow Trainer runtimes per workload), :mod:`.jobs` (nccl-tests,
the DCGM health check and the first training job). The constructs apply these objects with the
cluster's kubectl provider; ``fmc validate`` renders the same objects for ``kubectl``.
"""
