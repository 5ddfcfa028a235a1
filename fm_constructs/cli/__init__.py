"""``fmc``: the command line of fm-constructs (plan, preflight, capacity).

A side package: it reuses floor 1 (profile model, catalog, sizing functions) so that what
``fmc plan`` prints is what the constructs build, and talks to AWS through boto3 only in
``preflight`` and ``capacity``. It never imports aws_cdk, so it starts fast.
"""
