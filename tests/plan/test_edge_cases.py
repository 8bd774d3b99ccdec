"""`alicerce plan` on extreme and broken inputs: never a traceback, a NaN, an infinity or a negative figure.

Valid extremes (a tiny or a huge workload, free capacity, a region without prices, growth of zero,
shrinking demand) must plan cleanly in text and in JSON; nonsense (zero parameters, a zero deadline,
figures past any real job that would overflow the arithmetic) must be a located error with exit 2.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from alicerce.cli import build_app
from tests.conftest import ROOT

BASE: dict[str, Any] = yaml.safe_load((ROOT / "platform.yaml").read_text())
Mutation = Callable[[dict[str, Any]], object]


def workload(d: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(w for w in d["workloads"] if w["name"] == name)
    return found


def dc1(d: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = d["costs"]["onprem"][0]
    return found


def _grow_everything(d: dict[str, Any], rate: float) -> None:
    d["costs"]["horizonQuarters"] = 40
    for name in ("llm-pretrain", "chat-70b", "code-assistant-ft"):
        workload(d, name)["growth"] = {"perQuarter": rate}


def _at_the_bounds(d: dict[str, Any]) -> None:
    """Every figure at the largest value the spec accepts, growing 11x a quarter for 40 quarters."""
    _grow_everything(d, 10)
    workload(d, "llm-pretrain").update(tokens=10**18, model={"parameters": 10**16}, deadline=1, hoursPerDay=0.1)
    workload(d, "chat-70b").update(model={"parameters": 10**16}, traffic={"peakRps": 1e9, "inputTokens": 10**8, "outputTokens": 10**8})
    workload(d, "code-assistant-ft").update(tokens=10**18, deadline=1)
    d["costs"]["cloud"].append({"pool": "infer-l40s", "usdPerHour": 1e9})
    dc1(d).update(electricityUsdPerKwh=100, colocationUsdPerKwMonth=1e9, licenceUsdPerGpuYear=1e9, staffFte=1e6, usdPerFteYear=1e9,
                  storageUsdPerTb=1e9, connectivityUsdPerMonth=1e9,
                  pools=[{"pool": "onprem-h100", "serverUsd": 1e9, "networkUsd": 1e9, "nodePowerKw": 1000}])  # fmt: skip


def _free_owned_capacity(d: dict[str, Any]) -> None:
    dc1(d).update(electricityUsdPerKwh=0, colocationUsdPerKwMonth=0, supportFractionPerYear=0, staffFte=0, storageUsdPerTb=0,
                  licenceUsdPerGpuYear=0, pools=[{"pool": "onprem-h100", "serverUsd": 0, "networkUsd": 0}])  # fmt: skip


def _unpriced_region(d: dict[str, Any]) -> None:
    d["environments"]["prod"]["sites"][0].update(region="eu-central-1", zones=["eu-central-1a", "eu-central-1b"])
    next(p for p in d["nodePools"] if p["name"] == "train-p5")["aws"]["zone"] = "eu-central-1a"
    for tier in (t for t in d["storage"] if t["name"] in ("datasets", "checkpoints")):  # FSx zones are pinned (AL317)
        tier["aws"]["zone"] = "eu-central-1a"


VALID: dict[str, Mutation] = {
    "tiny serving peak": lambda d: workload(d, "chat-70b")["traffic"].update(peakRps=1e-9, meanRps=1e-10),
    "huge serving peak": lambda d: workload(d, "chat-70b")["traffic"].update(peakRps=1e9),
    "prompt longer than any KV cache": lambda d: workload(d, "chat-70b")["traffic"].update(inputTokens=10_000_000),
    "one training token": lambda d: workload(d, "llm-pretrain").update(tokens=1),
    "tiny model": lambda d: workload(d, "llm-pretrain").update(model={"parameters": 1000}),
    "model that fits nowhere": lambda d: workload(d, "llm-pretrain").update(model={"parameters": "1e16"}),
    "empty dataset": lambda d: workload(d, "tokenize-corpus").update(dataset={"size": "0GiB", "tier": "data-lake"}),
    "one-second deadline": lambda d: workload(d, "llm-pretrain").update(deadline="1s"),
    "growth of zero": lambda d: workload(d, "chat-70b").update(growth={"perQuarter": 0}),
    "shrinking demand": lambda d: [workload(d, n).update(growth={"perQuarter": -0.99}) for n in ("chat-70b", "llm-pretrain")],
    "free owned capacity": _free_owned_capacity,
    "a price of a trillionth of a dollar": lambda d: d["costs"]["cloud"].append({"pool": "infer-l40s", "usdPerHour": 1e-12}),
    "a 99% discount": lambda d: d["costs"]["cloud"].append({"pool": "infer-l40s", "savingsPlanDiscount": 0.99}),
    "no costs section": lambda d: d.pop("costs"),
    "a region the catalog does not price": _unpriced_region,
    "tiny life, rack and node power": lambda d: dc1(d).update(
        lifeYears=1e-9, kwPerRack=1e-9, pools=[{"pool": "onprem-h100", "nodePowerKw": 1e-9}]
    ),
    "every figure at its bound": _at_the_bounds,
}

INVALID: dict[str, tuple[Mutation, str]] = {
    "zero parameters": (lambda d: workload(d, "chat-70b").update(model={"parameters": 0}), "workloads[2].model.parameters"),
    "zero active parameters": (
        lambda d: workload(d, "llm-pretrain").update(model={"parameters": "70B", "architecture": "moe", "activeParameters": 0}),
        "workloads[0].model.activeParameters",
    ),
    "zero tokens": (lambda d: workload(d, "llm-pretrain").update(tokens=0), "workloads[0].tokens"),
    "zero global batch": (lambda d: workload(d, "llm-pretrain").update(globalBatchTokens=0), "workloads[0].globalBatchTokens"),
    "zero deadline": (lambda d: workload(d, "llm-pretrain").update(deadline="0s"), "workloads[0].deadline"),
    "sub-second deadline": (lambda d: workload(d, "llm-pretrain").update(deadline=1e-300), "workloads[0].deadline"),
    "zero checkpoint interval": (lambda d: workload(d, "llm-pretrain").update(checkpointInterval="0s"), "workloads[0].checkpointInterval"),
    "zero latency target": (
        lambda d: workload(d, "chat-70b").update(latency={"timePerOutputToken": {"p99": "0s"}}),
        "workloads[2].latency.timePerOutputToken.p99",
    ),
    "a moment a day": (lambda d: workload(d, "embed-batch").update(hoursPerDay=1e-300), "workloads[3].hoursPerDay"),
    "tokens past any run": (lambda d: workload(d, "llm-pretrain").update(tokens=1e300), "workloads[0].tokens"),
    "parameters past any model": (
        lambda d: workload(d, "llm-pretrain").update(model={"parameters": 1e300}),
        "workloads[0].model.parameters",
    ),
    "traffic past any service": (lambda d: workload(d, "chat-70b")["traffic"].update(peakRps=1e300), "workloads[2].traffic.peakRps"),
    "a price past any instance": (
        lambda d: d["costs"]["cloud"].append({"pool": "infer-l40s", "usdPerHour": 1e300}),
        "costs.cloud[1].usdPerHour",
    ),
    "an electricity tariff past any grid": (lambda d: dc1(d).update(electricityUsdPerKwh=1e300), "costs.onprem[0].electricityUsdPerKwh"),
    "a server price past any server": (
        lambda d: dc1(d).update(pools=[{"pool": "onprem-h100", "serverUsd": 1e300}]),
        "costs.onprem[0].pools[0].serverUsd",
    ),
    "growth of -100%": (lambda d: workload(d, "chat-70b").update(growth={"perQuarter": -1}), "workloads[2].growth.perQuarter"),
}

NOT_A_NUMBER = re.compile(r"\b(nan|inf|infinity)\b|-\$|\$-|Traceback", re.IGNORECASE)


def spec_file(tmp_path: Path, mutate: Mutation) -> Path:
    data = copy.deepcopy(BASE)
    mutate(data)
    path = tmp_path / "platform.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def plan(path: Path, *extra: str) -> Any:
    return CliRunner().invoke(build_app(), ["plan", str(path), "--env", "prod", "--tco", "--explain", *extra], env={"COLUMNS": "100"})


def bad_numbers(value: Any, path: str = "$") -> list[str]:
    """Every NaN, infinity or negative number in a JSON document, by its path."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return []
    if isinstance(value, (int, float)):
        return [f"{path}={value}"] if not math.isfinite(value) or value < 0 else []
    if isinstance(value, dict):
        return [bad for key, item in value.items() for bad in bad_numbers(item, f"{path}.{key}")]
    return [bad for i, item in enumerate(value) for bad in bad_numbers(item, f"{path}[{i}]")]


@pytest.mark.parametrize("case", sorted(VALID))
def test_extreme_but_valid_specs_plan_cleanly(case: str, tmp_path: Path) -> None:
    path = spec_file(tmp_path, VALID[case])
    text = plan(path)
    assert text.exit_code == 0 and text.exception is None, text.output
    assert not NOT_A_NUMBER.search(text.output), [line for line in text.output.splitlines() if NOT_A_NUMBER.search(line)]
    result = plan(path, "--format", "json")
    assert result.exit_code == 0 and result.exception is None, result.output
    document = json.loads(result.output, parse_constant=float)  # NaN/Infinity would parse here and fail below
    assert bad_numbers(document) == []


@pytest.mark.parametrize("case", sorted(INVALID))
def test_nonsense_is_a_located_error_with_exit_2(case: str, tmp_path: Path) -> None:
    mutate, spec_path = INVALID[case]
    result = plan(spec_file(tmp_path, mutate))
    assert result.exit_code == 2 and not isinstance(result.exception, (ArithmeticError, ValueError, TypeError)), result.output
    assert re.search(r"platform\.yaml:\d+:\d+: error\[AL\d+\]", result.output), result.output
    assert spec_path in result.output, result.output
