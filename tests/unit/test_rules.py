"""The rules engine: codes are documented, rules are pure, findings read the same everywhere."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fm_constructs.catalog import get_instance_type, regions
from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.rules import inference, platform
from fm_constructs.rules.findings import Finding, Severity
from fm_constructs.rules.inference import plan_layout
from fm_constructs.rules.reference import all_rules, render_errors_page

ROOT = Path(__file__).resolve().parents[2]
FLOOR_1 = ("rules", "config", "pins", "planning", "catalog", "domain")


def test_errors_page_lists_every_code_with_its_fix() -> None:
    page = (ROOT / "docs" / "reference" / "errors.md").read_text(encoding="utf-8")
    assert page == render_errors_page(), "run make docs-config"
    for code, rule in all_rules().items():
        assert f"| `{code}` |" in page
        assert rule.summary and rule.fix, code


def test_every_code_the_package_reports_is_registered() -> None:
    """A literal FMnnn anywhere in the package is a registered code."""
    codes = set(all_rules())
    for path in (ROOT / "fm_constructs").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                value = node.value
                if len(value) == 5 and value.startswith("FM") and value[2:].isdigit():
                    assert value in codes, f"{path}: {value}"


def _enclosing_classes(tree: ast.Module) -> dict[ast.AST, str]:
    """The name of the class each node of ``tree`` is defined in."""
    out: dict[ast.AST, str] = {}
    for klass in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(klass):
            out[node] = klass.name
    return out


def test_every_problem_the_package_raises_has_a_code_of_its_own() -> None:
    """No check of the package reports the generic FM000: each collector of problems
    (``Problems``) names its construct's code, ``Problems.of`` is used only in constructs
    whose class declares a ``problem_code``, and each error raised from plain messages names
    its code."""
    declared = {
        klass.name
        for path in (ROOT / "fm_constructs").rglob("*.py")
        for klass in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(klass, ast.ClassDef)
        and any(
            isinstance(stmt, ast.Assign)
            and any(getattr(t, "id", "") == "problem_code" for t in stmt.targets)
            for stmt in klass.body
        )
    }
    unnamed = []
    for path in (ROOT / "fm_constructs").rglob("*.py"):
        if path.name == "errors.py" and path.parent.name == "fm_constructs":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = _enclosing_classes(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            keywords = {k.arg for k in node.keywords}
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if name == "of" and getattr(func.value, "id", "") == "Problems":  # type: ignore[attr-defined]
                if classes.get(node) not in declared:
                    unnamed.append(f"{where}: {classes.get(node)} declares no problem_code")
            elif name == "Problems" and "code" not in keywords:
                unnamed.append(f"{where}: Problems() without code=")
            elif (
                name == "FmValidationError"
                and node.args
                and isinstance(node.args[0], ast.List)
                and not all(isinstance(e, ast.Call) for e in node.args[0].elts)
                and "code" not in keywords
            ):
                unnamed.append(f"{where}: FmValidationError of messages without code=")
    assert unnamed == [], "\n".join(unnamed)


def test_floor_1_never_imports_aws_cdk() -> None:
    for package in FLOOR_1:
        for path in (ROOT / "fm_constructs" / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                assert not any(n.split(".")[0] in ("aws_cdk", "constructs") for n in names), path


def test_a_finding_prints_key_allowed_value_fix_and_code() -> None:
    finding = Finding("FM201", Severity.ERROR, "kubernetes_version", "1.29", "must be x", "do y")
    assert finding.line() == "kubernetes_version: must be x, got '1.29'; do y [FM201]"
    assert finding.under("platform.").key == "platform.kubernetes_version"


def test_validation_errors_carry_codes_and_context() -> None:
    problems = Problems(context="GpuEksCluster Stack/Cluster")
    problems.add_findings(platform.kubernetes_version("1.29"))
    problems.add_findings(platform.admin_placeholders([]))  # a warning: not an error
    try:
        problems.raise_if_any()
    except FmValidationError as error:
        assert error.codes == ("FM201",)
        assert str(error).startswith("GpuEksCluster Stack/Cluster: kubernetes_version: ")
    else:
        raise AssertionError("expected an error")


def test_regions_and_services_come_from_botocore_endpoint_data() -> None:
    assert regions.partition_of("us-east-1") == "aws"
    assert regions.partition_of("cn-north-1") == "aws-cn"
    assert regions.partition_of("us-east-9") is None
    assert regions.offers("us-east-1", "aps") and not regions.offers("cn-north-1", "aps")
    assert platform.region_known("us-east-9")[0].code == "FM101"
    (finding,) = platform.services_offered("cn-north-1", [("aps", "platform.observability")])
    assert "platform.observability" in finding.line()


def test_zone_rules() -> None:
    assert not platform.zone_in_region("us-east-1f", "us-east-1")
    assert platform.zone_in_region("us-east-1g", "us-east-1")[0].code == "FM102"
    assert platform.zone_in_region("eu-west-1a", "us-east-1")
    assert not platform.zone_in_region("ap-south-2a", "ap-south-2")  # letters not recorded
    assert regions.zone_letters("ca-central-1") == "abd"


def test_public_endpoint_cidrs_are_judged_by_address_space() -> None:
    assert not platform.public_access_cidrs(["203.0.113.0/24", "198.51.100.0/24"])
    assert not platform.public_access_cidrs(["10.0.0.0/8"])
    (whole,) = platform.public_access_cidrs(["0.0.0.0/0"])
    assert whole.key == "public_access_cidrs[0]"
    # The whole internet in two halves, or many /9s, is refused as a whole.
    (halves,) = platform.public_access_cidrs(["0.0.0.0/1", "128.0.0.0/1"])
    assert halves.key == "public_access_cidrs" and "more than a /8" in halves.line()
    assert platform.public_access_cidrs(["10.0.0.0/9", "11.0.0.0/9", "12.0.0.0/9"])
    # Overlapping ranges count once.
    assert not platform.public_access_cidrs(["10.0.0.0/8", "10.1.0.0/16"])
    assert platform.public_access_cidrs(["::/1"])


def test_internet_facing_endpoint_needs_source_ranges() -> None:
    assert not inference.public_endpoint_source_ranges("internal", [])
    (missing,) = inference.public_endpoint_source_ranges("internet-facing", [])
    assert missing.code == "FM512"
    assert not inference.public_endpoint_source_ranges("internet-facing", ["203.0.113.0/24"])
    (wide,) = inference.public_endpoint_source_ranges("internet-facing", ["0.0.0.0/0"])
    assert wide.code == "FM512" and wide.key == "load_balancer_source_ranges[0]"


def test_internet_facing_endpoint_needs_tls_with_a_certificate_of_its_region() -> None:
    cert = "arn:aws:acm:us-east-1:111122223333:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
    assert not inference.endpoint_tls("internal", None, "us-east-1")
    (missing,) = inference.endpoint_tls("internet-facing", None, "us-east-1")
    assert (missing.code, missing.key) == ("FM513", "tls_certificate_arn")
    assert not inference.endpoint_tls("internet-facing", cert, "us-east-1")
    assert not inference.endpoint_tls("internal", cert, "us-east-1")
    (elsewhere,) = inference.endpoint_tls("internal", cert, "eu-west-1")
    assert "Region eu-west-1" in elsewhere.allowed
    (bad,) = inference.endpoint_tls(
        "internal", "arn:aws:iam::111122223333:server-certificate/x", None
    )
    assert bad.code == "FM513" and "ACM certificate ARN" in bad.allowed
    assert not inference.endpoint_tls("internet-facing", "${Token[TOKEN.1]}", "us-east-1")


def test_tokens_are_skipped() -> None:
    token = "${Token[TOKEN.123]}"
    assert not platform.admin_principals([token])
    assert not platform.public_access_cidrs([token])
    assert not platform.kubernetes_version(token)


def test_serving_layout_rules() -> None:
    g6e = get_instance_type("g6e.48xlarge")
    assert not inference.serving_layout(8, 1, g6e)
    assert not inference.serving_layout(2, 1, g6e)
    assert [f.code for f in inference.serving_layout(3, 1, g6e)] == ["FM503"]
    assert [f.code for f in inference.serving_layout(16, 1, g6e)] == ["FM502"]
    assert [f.code for f in inference.serving_layout(8, 3, get_instance_type("p5.48xlarge"))] == []
    assert [f.code for f in inference.serving_layout(4, 3, get_instance_type("p5.48xlarge"))] == [
        "FM504"
    ]
    trn = get_instance_type("trn1.32xlarge")
    assert [f.code for f in inference.serving_layout(1, 1, trn)] == ["FM501"]
    small = get_instance_type("g6e.2xlarge")
    assert not small.efa_supported
    assert not inference.efa_where_replicas_span_nodes(1, 1, small)
    layout = plan_layout(g6e, tensor_parallel_size=4)
    assert layout.pods_per_node == 2
    assert inference.replicas_fit_nodes(5, layout, 2)[0].code == "FM505"
    assert not inference.replicas_fit_nodes(4, layout, 2)


def test_each_code_carries_the_severity_its_findings_have() -> None:
    """The errors page lists each code's severity: the rules report at that severity."""
    rules = all_rules()
    assert rules["FM506"].severity is Severity.WARNING
    assert inference.model_present(False)[0].severity is Severity.WARNING
    assert rules["FM203"].severity is Severity.WARNING
    assert platform.admin_placeholders([])[0].severity is Severity.WARNING
    assert rules["FM201"].severity is Severity.ERROR
    assert rules["FM701"].severity is None  # a preflight check fails or warns
    assert rules["FM832"].severity is Severity.ERROR


def test_the_profile_and_the_model_server_spec_share_the_serving_rules() -> None:
    """gpu_memory_utilization's range and max_replicas >= replicas are held once: the
    profile loader and ModelServerSpec's checks report the same findings."""
    from fm_constructs.config import parse_profile
    from fm_constructs.patterns.inference_manifests import ModelServerSpec
    from fm_constructs.rules.inference import model_server_spec
    from tests.profile_data import INFERENCE, changed, profile_with

    model = {
        "model_s3_prefix": "models/m/",
        "served_model_name": "m",
        "gpu_memory_utilization": 0.99,
        "replicas": 2,
        "max_replicas": 1,
    }
    data = changed(profile_with(**INFERENCE), {"inference.model": model})
    with pytest.raises(FmValidationError) as raised:
        parse_profile(data)
    loaded = {f.code: f for f in raised.value.findings}
    spec = ModelServerSpec(
        model_s3_prefix="models/m/",
        served_model_name="m",
        gpu_memory_utilization=0.99,
        replicas=2,
        max_replicas=1,
    )
    built = {f.code: f for f in model_server_spec(spec)}
    for code, key in (("FM509", "gpu_memory_utilization"), ("FM510", "max_replicas")):
        assert loaded[code].key == f"inference.model.{key}" and built[code].key == key
        assert loaded[code].allowed == built[code].allowed
