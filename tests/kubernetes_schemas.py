"""Validate rendered Kubernetes objects against the schema of their kind, strictly.

Use from any test: ``assert_valid(objects, kubernetes_version="1.35")``. Unknown fields are
errors everywhere.

* Built-in kinds (core, apps, batch, rbac, ... ``*.k8s.io`` groups): the strict OpenAPI JSON
  schemas of that Kubernetes minor shipped in the ``kubernetes-validate`` package.
* Kubeflow Trainer kinds (``trainer.kubeflow.org``) and the JobSet kinds Trainer bundles
  (``jobset.x-k8s.io``): the API models generated from the Trainer CRDs, published on PyPI as
  ``kubeflow-trainer-api`` at the version of the pinned Trainer chart. The models ignore
  unknown keys, so :func:`_strict_model_check` walks each object alongside the model's fields
  and rejects every key the model does not declare, then lets the model check types and enums.
  Pod and job templates embedded in them are also checked as built-in kinds of the profile's
  Kubernetes version.
* Other custom kinds (Kueue, LeaderWorkerSet, KEDA, the VPC CNI's ENIConfig): the
  openAPIV3Schema of their CRDs at the pinned operator version, from its release tag
  (:data:`CRD_SCHEMAS`, files in ``tests/data/crds`` written by ``tools/crd_schema.py``),
  made strict by :func:`_strict_crd`; pod templates embedded in them
  (:data:`EMBEDDED_POD_TEMPLATES`) are also checked as built-in kinds.
  :func:`assert_valid` fails on any other kind, so a new kind cannot slip through unvalidated.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import referencing
from kubernetes_validate import utils as kv_utils
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from fm_constructs.orchestration.eks_charts import KUBEFLOW_TRAINER

_CRD_DATA = Path(__file__).parent / "data" / "crds"


@dataclass(frozen=True)
class CrdSchemas:
    """The CRD schemas of one API group: the file, how :func:`validate_object` reports it,
    and the chart pin (fm_constructs/pins/pins.toml) whose version the file must be of."""

    path: Path
    how: str
    chart: str | None = None


#: Custom kinds validated against their operator's CRDs, by API group.
CRD_SCHEMAS: dict[str, CrdSchemas] = {
    "kueue.x-k8s.io": CrdSchemas(_CRD_DATA / "kueue-v0.19.2.json", "kueue-crd", "kueue"),
    "crd.k8s.amazonaws.com": CrdSchemas(_CRD_DATA / "aws-vpc-cni-v1.23.0.json", "vpc-cni-crd"),
    "leaderworkerset.x-k8s.io": CrdSchemas(_CRD_DATA / "lws-v0.10.0.json", "lws-crd", "lws"),
    "keda.sh": CrdSchemas(_CRD_DATA / "keda-v2.20.2.json", "keda-crd", "keda"),
}

#: Paths of pod templates (PodTemplateSpec) inside custom kinds, checked as built-in objects.
EMBEDDED_POD_TEMPLATES: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): (
        ("spec", "leaderWorkerTemplate", "leaderTemplate"),
        ("spec", "leaderWorkerTemplate", "workerTemplate"),
    ),
}

_TRAINER_MODELS: dict[tuple[str, str], str] = {
    ("trainer.kubeflow.org", "ClusterTrainingRuntime"): "TrainerV1alpha1ClusterTrainingRuntime",
    ("trainer.kubeflow.org", "TrainingRuntime"): "TrainerV1alpha1TrainingRuntime",
    ("trainer.kubeflow.org", "TrainJob"): "TrainerV1alpha1TrainJob",
    ("jobset.x-k8s.io", "JobSet"): "JobsetV1alpha2JobSet",
}
_TRAINER_VERSIONS = {"trainer.kubeflow.org": "v1alpha1", "jobset.x-k8s.io": "v1alpha2"}


class SchemaError(AssertionError):
    """An object does not match the schema of its kind."""


def _group_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def is_builtin(api_version: str) -> bool:
    """Core and ``*.k8s.io`` API groups, except the ``x-k8s.io`` SIG projects (CRDs)."""
    group, _ = _group_version(api_version)
    return (
        group == ""
        or "." not in group
        or (group.endswith(".k8s.io") and not group.endswith(".x-k8s.io"))
    )


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind')}/{meta.get('namespace', '-')}/{meta.get('name', '?')}"


def validate_builtin(obj: Mapping[str, Any], kubernetes_version: str) -> None:
    """Strict schema of the built-in kind for ``kubernetes_version``."""
    try:
        validator = _builtin_validator(
            kubernetes_version, str(obj.get("kind")), str(obj.get("apiVersion"))
        )
        validator.validate(dict(obj))
    except jsonschema.ValidationError as error:
        path = ".".join(str(p) for p in error.path)
        raise SchemaError(f"{_name(obj)}: {path}: {error.message}") from None
    except kubernetes_validate.SchemaNotFoundError as error:
        raise SchemaError(f"{_name(obj)}: {error.message}") from None


@functools.cache
def _builtin_validator(
    desired_version: str, kind: str, api_version: str
) -> jsonschema.protocols.Validator:
    """The validator ``kubernetes_validate.validate(obj, desired_version, strict=True)`` builds
    for one kind (the same schema files, chosen the same way: kubernetes_validate/utils.py of
    the pinned release), built once per process: ``validate`` parses the version's
    ``_definitions.json`` (1.5 MB of JSON) and builds its reference registry on every call."""
    if desired_version.startswith("v"):
        desired_version = desired_version[1:]
    wanted = kv_utils.major_minor(desired_version)
    if wanted > kv_utils.latest_version():
        raise kv_utils.VersionNotSupportedError(version=wanted)
    version = [v for v in kv_utils.all_versions() if kv_utils.major_minor(v) <= wanted][-1]
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema_dir = f"kubernetes-json-schema/v{version}-local-strict"
    try:
        schema = kv_utils.schema_contents(
            f"{schema_dir}/{kind.lower()}-{group_version}.json", desired_version
        )
    except FileNotFoundError:
        raise kubernetes_validate.SchemaNotFoundError(
            version=wanted, kind=kind, api_version=api_version
        ) from None
    definitions = kv_utils.schema_contents(f"{schema_dir}/_definitions.json", desired_version)
    registry: referencing.Registry[Any] = referencing.Registry()
    registry = referencing.Resource.from_contents(schema) @ registry
    registry = referencing.Resource.from_contents(definitions) @ registry
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


# ---------------------------------------------------------------------------- model walking


def _unwrap(annotation: Any) -> list[Any]:
    """The alternatives of Optional/Union annotations (NoneType dropped)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [a for a in typing.get_args(annotation) if a is not type(None)]
    return [annotation]


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _strict_model_check(value: Any, annotation: Any, path: str, errors: list[str]) -> None:
    """Record every key of ``value`` that ``annotation`` (a model, list or dict of models)
    does not declare."""
    for option in _unwrap(annotation):
        origin = typing.get_origin(option)
        if _is_model(option):
            if "actual_instance" in option.model_fields:  # oneOf wrapper (IntOrString, Quantity)
                return
            if not isinstance(value, dict):
                return  # the model's own validation reports the wrong type
            fields = {(f.alias or n): f.annotation for n, f in option.model_fields.items()}
            for key, item in value.items():
                if key not in fields:
                    errors.append(f"{path}.{key}: unknown field (not in {option.__name__})")
                else:
                    _strict_model_check(item, fields[key], f"{path}.{key}", errors)
            return
        if origin in (list, Sequence) and isinstance(value, list):
            (inner,) = typing.get_args(option) or (Any,)
            for index, item in enumerate(value):
                _strict_model_check(item, inner, f"{path}[{index}]", errors)
            return
        if origin in (dict, Mapping) and isinstance(value, dict):
            args = typing.get_args(option)
            inner = args[1] if len(args) == 2 else Any
            for key, item in value.items():
                _strict_model_check(item, inner, f"{path}.{key}", errors)
            return


def trainer_api_version() -> str:
    return metadata.version("kubeflow-trainer-api")


def validate_trainer_kind(obj: Mapping[str, Any], kubernetes_version: str) -> None:
    """Trainer/JobSet kinds: the models of ``kubeflow-trainer-api`` at the chart's version."""
    installed = trainer_api_version()
    if installed != KUBEFLOW_TRAINER.version:
        raise SchemaError(
            f"kubeflow-trainer-api {installed} is installed, the pinned Trainer chart is "
            f"{KUBEFLOW_TRAINER.version}: pin the package to the chart version in pyproject.toml"
        )
    group, version = _group_version(str(obj.get("apiVersion")))
    kind = str(obj.get("kind"))
    if version != _TRAINER_VERSIONS[group]:
        raise SchemaError(f"{_name(obj)}: apiVersion {obj.get('apiVersion')} is not served")
    module = importlib.import_module("kubeflow_trainer_api.models")
    model = getattr(module, _TRAINER_MODELS[(group, kind)])
    errors: list[str] = []
    _strict_model_check(obj, model, kind, errors)
    try:
        model.from_dict(dict(obj))
    except (PydanticValidationError, ValueError, TypeError) as error:
        errors.append(str(error))
    if errors:
        raise SchemaError(f"{_name(obj)}:\n  " + "\n  ".join(errors))
    for job in _replicated_jobs(obj):
        validate_builtin(job, kubernetes_version)


def _replicated_jobs(obj: Mapping[str, Any]) -> Iterable[dict[str, Any]]:
    """The job templates of a runtime's (or JobSet's) replicated jobs, as batch/v1 Jobs."""
    spec = obj.get("spec") or {}
    jobset_spec = (spec.get("template") or {}).get("spec") if "template" in spec else spec
    for replicated in (jobset_spec or {}).get("replicatedJobs") or []:
        template = replicated.get("template") or {}
        metadata_ = {"name": replicated.get("name", "job"), **(template.get("metadata") or {})}
        yield {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": metadata_,
            "spec": template.get("spec") or {},
        }


def _dig(obj: Mapping[str, Any], path: Sequence[str]) -> Any:
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


@functools.cache
def crd_schemas(group: str) -> dict[str, Any]:
    """The schema file of ``group``: ``apiVersion``, ``source``, ``kinds`` (and what else the
    file records, e.g. the environment keys the VPC CNI reads)."""
    data: dict[str, Any] = json.loads(CRD_SCHEMAS[group].path.read_text())
    return data


def vpc_cni_crds() -> dict[str, Any]:
    """The VPC CNI's ENIConfig schema and the environment keys the CNI reads."""
    return crd_schemas("crd.k8s.amazonaws.com")


def _strict_crd(schema: Any) -> Any:
    """A CRD schema with unknown fields rejected (``additionalProperties: false`` wherever
    properties are listed and nothing else is said), as the API server's strict field
    validation does; ``metadata`` is checked by the API server itself."""
    if isinstance(schema, dict):
        out = {k: _strict_crd(v) for k, v in schema.items() if not k.startswith("x-kubernetes")}
        if "properties" in schema and "additionalProperties" not in schema:
            out["additionalProperties"] = False
        if "metadata" in out.get("properties", {}):
            out["properties"]["metadata"] = {"type": "object"}
        return out
    if isinstance(schema, list):
        return [_strict_crd(v) for v in schema]
    return schema


def _validate_metadata(obj: Mapping[str, Any], kubernetes_version: str) -> None:
    """A custom object's metadata is an ObjectMeta like any other: check it on a built-in kind."""
    validate_builtin(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj.get("metadata") or {}},
        kubernetes_version,
    )


def _validate_embedded_pod_templates(
    obj: Mapping[str, Any], group: str, kind: str, kubernetes_version: str
) -> None:
    for path in EMBEDDED_POD_TEMPLATES.get((group, kind), ()):
        template = _dig(obj, path)
        if template is None:
            raise SchemaError(f"{_name(obj)}: no pod template at {'.'.join(path)}")
        validate_builtin(
            {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": path[-1].lower()},
                "template": template,
            },
            kubernetes_version,
        )


def strict_crd_schema(group: str, kind: str) -> Any:
    """The strict schema of ``group``/``kind`` that :func:`validate_crd_kind` validates with
    (tests/unit/test_kubernetes_schemas.py checks each against its metaschema, once per run
    rather than in every test process: the LeaderWorkerSet schema takes seconds to check)."""
    return _strict_crd(crd_schemas(group)["kinds"][kind])


@functools.cache
def _crd_validator(group: str, kind: str) -> Any:
    """A validator of the strict schema of ``group``/``kind``, built once: the schemas of kinds
    with pod templates (LeaderWorkerSet) are large."""
    schema = strict_crd_schema(group, kind)
    return jsonschema.validators.validator_for(schema)(schema)


def validate_crd_kind(obj: Mapping[str, Any], kubernetes_version: str) -> str:
    """Validate a custom object against the pinned CRD schema of its kind (unknown fields
    rejected), its metadata and embedded pod templates as built-in objects; return how."""
    group, _ = _group_version(str(obj.get("apiVersion", "")))
    kind = str(obj.get("kind", ""))
    _validate_metadata(obj, kubernetes_version)
    crds = crd_schemas(group)
    if obj.get("apiVersion") != crds["apiVersion"]:
        raise SchemaError(f"{_name(obj)}: {kind} objects must use {crds['apiVersion']}")
    try:
        _crd_validator(group, kind).validate(dict(obj))
    except jsonschema.ValidationError as error:
        raise SchemaError(
            f"{_name(obj)}: {error.message} at {list(error.absolute_path)}"
        ) from error
    _validate_embedded_pod_templates(obj, group, kind, kubernetes_version)
    return CRD_SCHEMAS[group].how


def validate_object(obj: Mapping[str, Any], kubernetes_version: str) -> str:
    """Validate one object; return how (``builtin``, ``trainer-api`` or the ``how`` of its
    :data:`CRD_SCHEMAS` entry)."""
    api_version = str(obj.get("apiVersion", ""))
    kind = str(obj.get("kind", ""))
    if is_builtin(api_version):
        validate_builtin(obj, kubernetes_version)
        return "builtin"
    group, _ = _group_version(api_version)
    if (group, kind) in _TRAINER_MODELS:
        validate_trainer_kind(obj, kubernetes_version)
        return "trainer-api"
    if group in CRD_SCHEMAS and kind in crd_schemas(group)["kinds"]:
        return validate_crd_kind(obj, kubernetes_version)
    raise SchemaError(
        f"{_name(obj)}: no schema source for {group}/{kind}; add its operator's CRDs to "
        "CRD_SCHEMAS (tools/crd_schema.py) or its registry package here"
    )


def assert_valid(objects: Iterable[Mapping[str, Any]], *, kubernetes_version: str) -> list[str]:
    """Validate every object (all errors at once); return how each was validated."""
    how: list[str] = []
    errors: list[str] = []
    for obj in objects:
        try:
            how.append(validate_object(obj, kubernetes_version))
        except SchemaError as error:
            errors.append(str(error))
    if errors:
        raise SchemaError("\n".join(errors))
    return how
