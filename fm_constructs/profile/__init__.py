"""Floor 1: the validated profile as frozen dataclasses (pure data, no aws_cdk import).

The model sits below the rules (:mod:`fm_constructs.rules`) and the profile loader
(:mod:`fm_constructs.config`), so the rules can take a profile and the loader can run them.
:mod:`fm_constructs.config.model` re-exports every name.
"""
