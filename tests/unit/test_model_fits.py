"""FM511: a model whose weights do not fit the GPUs one replica has is an error when the
profile loads, with the fix (more GPUs per replica, on a type that has them; quantized
weights; a smaller model). Figures: parameters x bytes per parameter, against GPUs x memory
per GPU x gpu_memory_utilization."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from fm_constructs.catalog import get_instance_type
from fm_constructs.config import load_profile
from fm_constructs.errors import FmValidationError
from fm_constructs.rules.inference import parameters_in_name, weights_fit_gpus
from tests.profile_data import changed, to_toml

ROOT = Path(__file__).resolve().parents[2]
SERVE = tomllib.loads((ROOT / "config" / "inference-g6e.toml").read_text(encoding="utf-8"))
KEY = "inference.model.tensor_parallel_size"


def _load(tmp_path: Path, changes: dict[str, Any]) -> Any:
    path = tmp_path / "p.toml"
    path.write_text(to_toml(changed(SERVE, changes)) + "\n", encoding="utf-8")
    return load_profile(path)


def _fm511(tmp_path: Path, changes: dict[str, Any]) -> str:
    with pytest.raises(FmValidationError) as raised:
        _load(tmp_path, changes)
    found = [f for f in raised.value.findings if f.code == "FM511"]
    assert [f.key for f in found] == [KEY], raised.value
    return found[0].line()


@pytest.mark.parametrize(
    ("names", "size"),
    [
        (("llama-3.1-70b-instruct",), 70.0),
        (("Qwen3-32B",), 32.0),
        ((None, "models/llama-3-8b/"), 8.0),
        (("phi-3.5-mini-3.8b",), 3.8),
        (("mixtral-8x7b",), None),  # 8x7B is not 7 billion parameters
        (("gpt-oss",), None),
    ],
)
def test_size_read_from_names(names: tuple[str | None, ...], size: float | None) -> None:
    found = parameters_in_name(*names)
    assert (found[0] if found else None) == size


def test_weights_figure() -> None:
    """70e9 x 2 bytes = 130.4 GiB; one L40S gives 44.7 x 0.9 = 40.2 GiB; 4 give 161."""
    l40s = get_instance_type("g6e.2xlarge")
    assert weights_fit_gpus(70, 2, 1, 1, l40s, 0.9)
    assert not weights_fit_gpus(70, 2, 4, 1, get_instance_type("g6e.12xlarge"), 0.9)
    assert not weights_fit_gpus(8, 2, 1, 1, l40s, 0.9)  # 14.9 GiB
    assert not weights_fit_gpus(70, 0.5, 1, 1, l40s, 0.9)  # 32.6 GiB at 4 bits


def test_70b_on_one_l40s_is_an_error_naming_the_type_that_fits(tmp_path: Path) -> None:
    line = _fm511(
        tmp_path,
        {
            "inference.instance_type": "g6e.2xlarge",
            "inference.model.served_model_name": "llama-3.1-70b-instruct",
            "inference.model.tensor_parallel_size": 1,
        },
    )
    assert "1 x 45 GiB L40S (40 GiB at gpu_memory_utilization 0.9)" in line
    assert "70B-parameter model (read from 'llama-3.1-70b-instruct'" in line
    assert "take 130 GiB" in line
    assert "g6e.12xlarge" in line and "tensor_parallel_size = 4" in line


def test_the_fix_stays_on_the_type_when_it_has_the_gpus(tmp_path: Path) -> None:
    line = _fm511(
        tmp_path,
        {
            "inference.model.model_parameters_billion": 235,
            "inference.model.tensor_parallel_size": 2,
        },
    )
    # 235e9 x 2 = 438 GiB over 40.2 GiB GPUs: 11, so tensor parallel 16 > 8: spans nodes.
    assert "(model_parameters_billion)" in line
    assert "span nodes: tensor_parallel_size = 8 and pipeline_parallel_size = 2" in line
    small = _fm511(
        tmp_path,
        {"inference.model.model_parameters_billion": 70, "inference.model.tensor_parallel_size": 2},
    )
    assert "set tensor_parallel_size = 4 (g6e.48xlarge has 8 GPUs)" in small


def test_quantized_weights_and_stated_sizes_load(tmp_path: Path) -> None:
    fp8 = _load(
        tmp_path,
        {
            "inference.model.served_model_name": "llama-3.1-70b-instruct",
            "inference.model.tensor_parallel_size": 2,
            "inference.model.weight_bytes_per_parameter": 1,
        },
    )
    assert fp8.inference.model.weight_bytes_per_parameter == 1
    # An explicit size wins over the name.
    stated = _load(
        tmp_path,
        {
            "inference.model.served_model_name": "llama-3.1-70b-instruct",
            "inference.model.model_parameters_billion": 8,
            "inference.model.tensor_parallel_size": 1,
        },
    )
    assert stated.inference.model.model_parameters_billion == 8


def test_every_shipped_profile_fits() -> None:
    for path in sorted((ROOT / "config").glob("*.toml")):
        load_profile(path)
