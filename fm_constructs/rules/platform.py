"""Rules on the shared platform: region, zones, services, Kubernetes version, the EKS API.

Each function takes plain values and returns findings keyed by the argument's own name
(``region``, ``admin_role_arns[0]``); the profile loader puts them under ``platform.``, a
construct under its path.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from importlib import metadata

from fm_constructs.catalog import regions
from fm_constructs.planning.kubernetes_versions import (
    DEFAULT_KUBERNETES_VERSION,
    SUPPORTED_VERSIONS,
    supported_versions_text,
)
from fm_constructs.planning.vpc_layout import MAX_ZONES, VPC_PREFIX_RANGE
from fm_constructs.rules.findings import RULES, Finding, Severity, define, rule

_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
#: The account number AWS documentation uses in examples; a real profile never holds it.
EXAMPLE_ACCOUNT = "111122223333"


def _is_token(value: str) -> bool:
    """CDK tokens (``${Token[...]}``) are resolved at deploy time and cannot be checked."""
    return "${Token[" in value or value.startswith("#{")


@rule(
    "FM101",
    "The region is not an AWS region botocore's endpoint data knows.",
    "Set the region to an AWS region name such as 'us-east-1'.",
)
def region_known(region: str, *, key: str = "region") -> list[Finding]:
    if _is_token(region) or regions.partition_of(region) is not None:
        return []
    return [
        Finding(
            "FM101",
            Severity.ERROR,
            key,
            region,
            "must be an AWS region (botocore's endpoint data lists "
            f"{len(regions.regions())}, such as 'us-east-1')",
            "fix the spelling of the region",
        )
    ]


@rule(
    "FM102",
    "A zone name cannot exist in the region (wrong region prefix or a letter the region "
    "does not have).",
    "Use a zone of the region, such as '<region>a'; `aws ec2 describe-availability-zones` "
    "lists yours.",
)
def zone_in_region(
    zone: str, region: str, *, key: str = "availability_zone", region_key: str = "region"
) -> list[Finding]:
    if _is_token(zone) or _is_token(region) or not region:
        return []
    match = re.fullmatch(re.escape(region) + r"([a-z])", zone)
    letters = regions.zone_letters(region)
    if match is not None and (letters is None or match.group(1) in letters):
        return []
    if regions.ZONE_ID_PATTERN.fullmatch(zone):
        allowed = (
            f"must be a zone name of {region_key} {region!r} such as {region + 'a'!r}, not a "
            "zone ID"
        )
    elif match is None:
        allowed = f"must be a zone of {region_key} {region!r} (such as {region + 'a'!r})"
    else:
        names = ", ".join(region + letter for letter in letters or "")
        allowed = f"must be a zone that {region_key} {region!r} has ({names})"
    return [
        Finding(
            "FM102",
            Severity.ERROR,
            key,
            zone,
            allowed,
            "list your zones with `aws ec2 describe-availability-zones --region " + region + "`",
        )
    ]


@rule(
    "FM103",
    "The profile uses a service the region does not offer (for example in the China or "
    "GovCloud partitions).",
    "Choose a region that offers the service, or turn off the part of the profile that needs "
    "it (for example platform.grafana = false).",
)
def services_offered(
    region: str, services: Iterable[tuple[str, str]], *, key: str = "region"
) -> list[Finding]:
    """``services``: (endpoint prefix from :data:`regions.SERVICES`, the key that needs it)."""
    if _is_token(region) or regions.partition_of(region) is None:
        return []
    out: list[Finding] = []
    for service, needed_by in services:
        if not regions.offers(region, service):
            out.append(
                Finding(
                    "FM103",
                    Severity.ERROR,
                    key,
                    region,
                    f"must offer {regions.SERVICES[service]}, which {needed_by} needs "
                    f"({regions.ENDPOINTS_SOURCE} lists no endpoint there)",
                    f"choose a region with {regions.SERVICES[service]} or change {needed_by}",
                )
            )
    return out


@rule(
    "FM104",
    f"Zones listed twice, fewer than two zones or more than {MAX_ZONES}, or the GPU zone "
    "missing from the list.",
    f"List two to {MAX_ZONES} distinct zones of the region, including the GPU zone.",
)
def zone_list(
    zones: Sequence[str],
    gpu_zone: str,
    *,
    key: str = "availability_zones",
    gpu_zone_key: str = "availability_zone",
) -> list[Finding]:
    broken: list[str] = []
    if len(set(zones)) != len(zones):
        broken.append("zones must be unique")
    if len(zones) == 1:
        broken.append(
            "list at least two zones (EKS and HyperPod-EKS need subnets in two zones; "
            f"GPU nodes stay in {gpu_zone!r})"
        )
    if len(zones) > MAX_ZONES:
        broken.append(
            f"list at most {MAX_ZONES} zones (each zone's private subnet takes a quarter of "
            "the VPC CIDR)"
        )
    if gpu_zone and zones and gpu_zone not in zones:
        broken.append(
            f"must include {gpu_zone_key} {gpu_zone!r} (the zone of the GPU nodes and FSx)"
        )
    return [Finding("FM104", Severity.ERROR, key, list(zones), allowed) for allowed in broken]


@rule(
    "FM201",
    "The Kubernetes version is not one the library deploys (EKS standard support, known to "
    "aws-cdk-lib, with a kubectl layer package).",
    "Use one of the supported versions listed in the message (quoted, such as '1.35').",
)
def kubernetes_version(version: str, *, key: str = "kubernetes_version") -> list[Finding]:
    if _is_token(version) or version.strip() in SUPPORTED_VERSIONS:
        return []
    return [
        Finding(
            "FM201",
            Severity.ERROR,
            key,
            version,
            f"must be a Kubernetes version in EKS standard support: {supported_versions_text()}",
            "pick one of them",
        )
    ]


@rule(
    "FM205",
    "The Kubernetes version's kubectl layer package (aws-cdk.lambda-layer-kubectl-v1XX) is not "
    "installed, so its clusters cannot be synthesized.",
    "pip install the package the message names, or use the default Kubernetes version.",
)
def kubectl_layer_installed(
    version: str, *, key: str = "kubernetes_version", layer_argument: str | None = None
) -> list[Finding]:
    """The layer package of a supported ``version`` is installed (checked through package
    metadata, without importing it). ``layer_argument``: the construct argument that takes a
    layer instead, named in the fix."""
    entry = SUPPORTED_VERSIONS.get(version.strip())
    if entry is None or _is_token(version):
        return []
    try:
        metadata.version(entry.layer_package)
    except metadata.PackageNotFoundError:
        return [
            Finding(
                "FM205",
                Severity.ERROR,
                key,
                version,
                f"needs the kubectl layer package {entry.layer_package!r}, which is not installed",
                f"pip install '{entry.layer_package}', "
                + (f"pass {layer_argument}=, " if layer_argument else "")
                + f"or use the default {DEFAULT_KUBERNETES_VERSION}",
            )
        ]
    return []


def cluster_kubernetes_version(version: str, *, layer_argument: str | None) -> list[Finding]:
    """The rules an EKS cluster construct runs on its ``kubernetes_version``: a supported
    version (FM201) and, when the construct builds its own kubectl layer, the layer's package
    installed (FM205). ``layer_argument``: the argument that takes a layer instead, named in the
    fix; None when one was given (no package needed)."""
    found = kubernetes_version(version)
    if layer_argument is not None:
        found += kubectl_layer_installed(version, layer_argument=layer_argument)
    return found


@rule(
    "FM202",
    "A cluster admin is not an IAM role ARN (a bare name, a user or another principal).",
    "Give the full role ARN, such as 'arn:aws:iam::<account>:role/<name>'.",
)
def admin_principals(arns: Sequence[str], *, key: str = "admin_role_arns") -> list[Finding]:
    out: list[Finding] = []
    for index, arn in enumerate(arns):
        if _is_token(arn) or _ROLE_ARN.match(arn):
            continue
        kind = "an IAM user" if ":user/" in arn else "not an IAM role ARN"
        out.append(
            Finding(
                "FM202",
                Severity.ERROR,
                f"{key}[{index}]",
                arn,
                f"must be an IAM role ARN such as 'arn:aws:iam::111122223333:role/Admin' "
                f"({arn!r} is {kind})",
                "give the ARN of a role your operators assume",
            )
        )
    return out


@rule(
    "FM207",
    "A cluster admin role belongs to another account than the platform's: EKS rejects the "
    "access entry (``principalArn is invalid``) only after the control plane is built.",
    "List roles of the deploying account (platform.account), or leave the account unset.",
)
def admin_accounts(
    arns: Sequence[str], account: str | None, *, key: str = "admin_role_arns"
) -> list[Finding]:
    if account is None or _is_token(account):
        return []
    out: list[Finding] = []
    for index, arn in enumerate(arns):
        if _is_token(arn) or not _ROLE_ARN.match(arn):
            continue  # admin_principals reports malformed ARNs
        role_account = arn.split(":")[4]
        if role_account != account:
            out.append(
                Finding(
                    "FM207",
                    Severity.ERROR,
                    f"{key}[{index}]",
                    arn,
                    f"must be a role of the account {account} (EKS rejects principals of "
                    f"account {role_account})",
                    "list your operators' roles in that account",
                )
            )
    return out


@rule(
    "FM203",
    "A cluster admin role is in AWS's documentation account 111122223333 (the shipped "
    "example), or no admin role is given.",
    "Replace it with the role ARNs your operators assume; without one, only the stack's "
    "deploy role can reach the cluster.",
    severity=Severity.WARNING,
)
def admin_placeholders(arns: Sequence[str], *, key: str = "admin_role_arns") -> list[Finding]:
    if not arns:
        return [
            Finding(
                "FM203",
                Severity.WARNING,
                key,
                [],
                "no admin role is given, so no operator gets cluster-admin",
                "list the role ARNs your operators assume",
            )
        ]
    return [
        Finding(
            "FM203",
            Severity.WARNING,
            f"{key}[{index}]",
            arn,
            f"is in AWS's example account {EXAMPLE_ACCOUNT}, not yours",
            "replace it with a role of your account",
        )
        for index, arn in enumerate(arns)
        if f"::{EXAMPLE_ACCOUNT}:" in arn
    ]


#: The most addresses the public API endpoint CIDRs may open together: a /8 (offices and VPNs
#: are far smaller; split /0 into /1s and the endpoint is still open to the internet).
MAX_PUBLIC_ACCESS_ADDRESSES = 2**24


@rule(
    "FM204",
    "A public API endpoint CIDR is not a CIDR block, or the ranges open the endpoint to the "
    "whole internet (or more than a /8 of it together).",
    "List your office or VPN ranges (such as '203.0.113.0/24'), or leave the list empty for "
    "a private endpoint.",
)
def public_access_cidrs(cidrs: Sequence[str], *, key: str = "public_access_cidrs") -> list[Finding]:
    out: list[Finding] = []
    networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
    for index, cidr in enumerate(cidrs):
        if _is_token(cidr):
            continue
        try:
            network = ipaddress.ip_network(cidr, strict=True)
        except ValueError:
            broken = (
                "must be a CIDR block such as '203.0.113.0/24'",
                "write the network address and prefix length",
            )
        else:
            if network.prefixlen != 0:
                networks.append(network)
                continue
            broken = (
                "must not open the API endpoint to the whole internet",
                "list your office or VPN ranges, or leave public_access_cidrs empty for a "
                "private endpoint",
            )
        out.append(Finding("FM204", Severity.ERROR, f"{key}[{index}]", cidr, *broken))
    # By address space, not by prefix: 0.0.0.0/1 and 128.0.0.0/1 are the internet too.
    v4 = [n for n in networks if isinstance(n, ipaddress.IPv4Network)]
    v6 = [n for n in networks if isinstance(n, ipaddress.IPv6Network)]
    totals = (
        (4, v4, sum(n.num_addresses for n in ipaddress.collapse_addresses(v4)), 8),
        (6, v6, sum(n.num_addresses for n in ipaddress.collapse_addresses(v6)), 104),
    )
    for version, same, total, widest in totals:
        limit = MAX_PUBLIC_ACCESS_ADDRESSES if version == 4 else MAX_PUBLIC_ACCESS_ADDRESSES << 96
        if total > limit:
            out.append(
                Finding(
                    "FM204",
                    Severity.ERROR,
                    key,
                    [str(n) for n in same],
                    f"must not open the API endpoint to more than a /{widest} of the "
                    f"IPv{version} internet together ({total:,} addresses here)",
                    "list your office or VPN ranges, or leave public_access_cidrs empty for a "
                    "private endpoint",
                )
            )
    return out


@rule(
    "FM105",
    "The VPC CIDR is not an IPv4 network with a prefix between "
    f"/{VPC_PREFIX_RANGE[0]} and /{VPC_PREFIX_RANGE[1]}.",
    f"Use an IPv4 network such as '10.0.0.0/16' (/{VPC_PREFIX_RANGE[0]} to "
    f"/{VPC_PREFIX_RANGE[1]}).",
)
def vpc_cidr(cidr: str, *, key: str = "vpc_cidr") -> list[Finding]:
    if not isinstance(cidr, str):  # a library caller outside the type checker
        return [
            Finding("FM105", Severity.ERROR, key, cidr, "must be a string such as '10.0.0.0/16'")
        ]
    if _is_token(cidr):
        return []
    try:
        network = ipaddress.IPv4Network(cidr, strict=True)
    except ValueError:
        return [
            Finding(
                "FM105", Severity.ERROR, key, cidr, "must be an IPv4 network such as '10.0.0.0/16'"
            )
        ]
    shortest, longest = VPC_PREFIX_RANGE
    if not shortest <= network.prefixlen <= longest:
        # The nearest block of an allowed size that starts at the same address.
        nearest = min(max(network.prefixlen, shortest), longest)
        near = ipaddress.IPv4Network(f"{network.network_address}/{nearest}", strict=False)
        return [
            Finding(
                "FM105",
                Severity.ERROR,
                key,
                cidr,
                f"must have a prefix between /{shortest} and /{longest}",
                f"use a block such as '{near}'",
            )
        ]
    return []


ACCEPTED_WARNINGS = define(
    "FM208",
    "platform.accepted_warnings names something that is not a warning: an unknown code, an "
    "error's code (errors cannot be accepted), or a construct warning id without its 'fm:' "
    "prefix.",
    "List warning codes as fmc plan prints them ('FM203') and construct warning ids as cdk "
    "synth prints them in brackets ('fm:no-cluster-admins').",
)
_WARNING_ID = re.compile(r"fm:[a-z0-9][a-z0-9-]*")


def accepted_warnings(codes: Sequence[str], *, key: str = "accepted_warnings") -> list[Finding]:
    """Each accepted warning is a profile warning's code or a construct warning's id."""
    out: list[Finding] = []
    for index, code in enumerate(codes):
        where = f"{key}[{index}]"
        if _WARNING_ID.fullmatch(code):
            continue
        known = RULES.get(code)
        if known is None:
            out.append(
                ACCEPTED_WARNINGS.finding(
                    where, code, "must be a warning code (FM...) or a construct warning id (fm:...)"
                )
            )
        elif known.severity is Severity.ERROR:
            out.append(
                ACCEPTED_WARNINGS.finding(
                    where,
                    code,
                    f"must be a warning; {code} is an error: {known.summary}",
                    known.fix,
                )
            )
    return out


@rule(
    "FM209",
    "A principal let through the data perimeter (the break-glass role or one of "
    "data_perimeter_principals) is not an IAM role ARN of the platform's account.",
    "Give the full ARN of a role of the deploying account, such as "
    "'arn:aws:iam::<account>:role/<name>'.",
)
def perimeter_principals(
    arns: Sequence[str], account: str | None, *, key: str = "data_perimeter_principals"
) -> list[Finding]:
    """``arns``: the roles listed under ``key`` (one value: ``key`` is reported as is)."""
    out: list[Finding] = []
    for index, arn in enumerate(arns):
        where = key if key == "break_glass_role_arn" else f"{key}[{index}]"
        if _is_token(arn):
            continue
        if not _ROLE_ARN.match(arn):
            kind = "an IAM user" if ":user/" in arn else "not an IAM role ARN"
            problem = (
                "must be an IAM role ARN such as 'arn:aws:iam::111122223333:role/Ops' "
                f"({arn!r} is {kind})"
            )
        elif account is not None and not _is_token(account) and arn.split(":")[4] != account:
            problem = (
                f"must be a role of the account {account} (the perimeter denies every "
                "principal of the account but those it lists; other accounts get no access "
                "to the bucket at all)"
            )
        else:
            continue
        out.append(
            Finding(
                "FM209",
                Severity.ERROR,
                where,
                arn,
                problem,
                "give the ARN of a role of the deploying account",
            )
        )
    return out


@rule(
    "FM210",
    "The data perimeter is off: IAM alone decides who reads the data bucket, so any role of "
    "the account with broad S3 and KMS rights copies every checkpoint and served model.",
    "Leave platform.data_perimeter on and list the roles that need the bucket in "
    "break_glass_role_arn or data_perimeter_principals.",
    severity=Severity.WARNING,
)
def data_perimeter_off(enabled: bool, *, key: str = "data_perimeter") -> list[Finding]:
    if enabled:
        return []
    return [
        Finding(
            "FM210",
            Severity.WARNING,
            key,
            False,
            "turns the data perimeter off: any principal of the account whose IAM policies "
            "allow it reads and writes every dataset, checkpoint and model",
            "leave it on and let the roles that need the bucket in through "
            "data_perimeter_principals",
        )
    ]
