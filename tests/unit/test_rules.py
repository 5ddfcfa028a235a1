"""The rules engine: codes are documented, rules are pure, findings read the same everywhere."""

from __future__ import annotations

import ast
from pathlib import Path

from fm_constructs.catalog import get_instance_type
from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.planning.serving_layout import plan_layout
from fm_constructs.rules import inference, platform, regions
from fm_constructs.rules.findings import Finding, Severity
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
