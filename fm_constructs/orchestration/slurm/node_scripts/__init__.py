"""Scripts HyperPod runs on each node at creation (``on_create.sh`` is the entry point).

The Python modules here render configuration from ``provisioning_parameters.json`` and
HyperPod's ``resource_config.json``; they use only the standard library and run on the
python3 of the HyperPod AMIs (3.8 or newer).
"""
