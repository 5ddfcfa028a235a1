"""fm-constructs: AWS CDK constructs for foundation-model pre-training, post-training and
inference infrastructure (accelerated compute on EFA, FSx for Lustre linked to S3, EKS and
SageMaker HyperPod orchestration, managed Prometheus and Grafana)."""

__version__ = "0.1.0"
