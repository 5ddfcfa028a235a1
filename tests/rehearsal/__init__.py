"""Deploy rehearsal: the real CDK CLI deploys, updates and destroys every profile against a
local AWS (moto's server plus the extensions in ``local_aws``). Run with
``pytest -m rehearsal tests/rehearsal`` (``make rehearsal``)."""
