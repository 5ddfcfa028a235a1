"""Online rules: checks that ask AWS, with the boto3 client passed in, returning the same
:class:`~fm_constructs.domain.findings.Finding` as the offline rules.

An online check's outcome is known only once AWS answers, so its code is registered without a
fixed severity: a finding is an error (the check fails), a warning, or an ``INFO`` note of
what AWS said when the check passes. A finding here has no key: its ``allowed`` is the whole
line ``fmc preflight`` prints and ``fix`` the fix. ``fmc preflight`` runs these rules and
prints them; an AWS error that is not an answer raises :class:`AwsCallError`.
"""
