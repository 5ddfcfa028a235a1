"""Lambda handler of the VpcTeardownGuard custom resource (shipped as a CDK asset)."""
