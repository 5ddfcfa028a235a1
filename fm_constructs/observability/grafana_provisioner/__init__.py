"""Lambda handler of the GrafanaDashboards custom resource (shipped as a CDK asset)."""
