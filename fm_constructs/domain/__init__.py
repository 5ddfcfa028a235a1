"""Floor 1: the shared vocabulary every layer uses (names, labels, ports). Imports no aws_cdk."""
