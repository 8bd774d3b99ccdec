"""Hostile values are bounded before they cost time or reach generated files.

Host-range products are counted from their brackets before anything is expanded; host names are
RFC 1123 names; labels follow Kubernetes' label syntax and, where they become AWS tags, AWS's tag
limits; free text has a length; no value in a spec is longer than the loader's cap.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from alicerce.rules.validate import check
from alicerce.spec.errors import SpecInvalid
from alicerce.spec.loader import MAX_SCALAR, load_file, load_text
from alicerce.spec.units import MAX_HOSTS_PER_POOL, count_hosts, expand_hosts, host_pattern_problem
from tests.conftest import ROOT, TODAY, alicerce

REFERENCE = (ROOT / "platform.yaml").read_text("utf-8")
RANGE = '{hosts: "gpu-[001:016].dc1.acme.example", rack: r01}'
LABELS = "  labels:\n    business-unit: ai-research\n"


def errors(text: str) -> list[str]:
    try:
        checked = check(load_text(text, "spec.yaml"), ["prod"], on=TODAY)
    except SpecInvalid as exc:
        return [e.render() for e in exc.errors]
    return [e.render() for e in checked.errors]


RANGE_LINE = REFERENCE[: REFERENCE.index(RANGE)].count("\n") + 1  # where the first host range is written


def with_hosts(*entries: str) -> str:
    """The reference spec with its first host range (at RANGE_LINE) replaced by ``entries``."""
    assert RANGE in REFERENCE
    return REFERENCE.replace(RANGE, "\n        - ".join(entries))


def with_labels(labels: str) -> str:
    """The reference spec with ``metadata.labels`` (line 12) replaced by ``labels``."""
    assert LABELS in REFERENCE
    return REFERENCE.replace(LABELS, f"  labels: {labels}\n")


# -- 7. host-range products are counted, not expanded ------------------------------------------------


def test_counting_a_product_does_not_expand_it() -> None:
    assert count_hosts("gpu-[0001:9999]-[01:99].dc1") == 9999 * 99
    assert count_hosts("n-[1:2]-[1:3]-[1:4]") == 24
    assert count_hosts("plain.example.com") == 1
    started = time.perf_counter()
    assert count_hosts("x" + "-[0:99999]" * 40) == 100000**40
    assert time.perf_counter() - started < 0.1


def test_expanding_refuses_a_product_over_the_cap_before_building_it() -> None:
    with pytest.raises(ValueError, match=r"expands to 989,901 hosts, over the 10,000"):
        expand_hosts("gpu-[0001:9999]-[01:99].dc1")
    assert len(expand_hosts("gpu-[01:100]-[1:100]")) == MAX_HOSTS_PER_POOL


def test_a_huge_host_product_is_refused_at_once_and_located(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(with_hosts('{hosts: "gpu-[0001:9999]-[01:99].dc1.acme.example", rack: r01}'))
    started = time.perf_counter()
    result = alicerce("validate", str(spec), "--env", "prod", timeout=30)
    assert result.returncode == 2
    assert time.perf_counter() - started < 10
    assert f"{spec}:{RANGE_LINE}:11: error[AL220]" in result.stdout
    assert "989,901 hosts" in result.stdout


def test_the_hosts_of_a_pool_are_capped_in_total() -> None:
    found = errors(with_hosts(*(f'"gpu{i}-[0001:2000].dc1.acme.example"' for i in range(6))))
    assert any("error[AL220]" in e and "add up to 12,016 hosts, over the 10,000 a pool may have" in e for e in found), found


# -- 8. host names are RFC 1123 names ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("../../etc/gpu-[001:016]; rm -rf /", 'is not a host name: "/" ";" " " are not allowed'),
        ("GPU-[01:02].dc1", "uppercase"),
        ("gpu-[01:02]..dc1", "an empty label"),
        ("-gpu-[01:02].dc1", "starts or ends with"),
        ("gpu-" + "a" * 60 + "-[001:100].dc1", "over 63"),
        (".".join(["a" * 60] * 5) + ".x-[1:99]", "over 253"),
        ("À", 'is not a host name: "À" is not allowed'),  # an uppercase letter outside ASCII (the fuzz's crash)
        ("gpu-İ-[1:2]", '"İ" is not allowed'),
    ],
)
def test_host_patterns_must_be_rfc_1123_names(pattern: str, problem: str) -> None:
    found = host_pattern_problem(pattern)
    assert found is not None and problem in found, found


@pytest.mark.parametrize("pattern", ["gpu-[001:032].dc1.acme.example", "cp-[1:3].dc1", "node7", "r[1:2]-[01:02].x-y.z"])
def test_valid_host_patterns(pattern: str) -> None:
    assert host_pattern_problem(pattern) is None


def test_shell_text_in_host_names_never_reaches_the_inventory(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(with_hosts('{hosts: "../../etc/gpu-[001:016]; rm -rf /", rack: r01}'))
    result = alicerce("generate", "--env", "prod", str(spec), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert f"{spec}:{RANGE_LINE}:11: error[AL221]" in result.stdout
    assert not (tmp_path / "out").exists()


# -- 9. labels, tags and free text are bounded -------------------------------------------------------


def test_a_two_million_character_label_is_refused_by_the_loader_without_echoing_it(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(with_labels(f"{{team: {'x' * 2_000_000}}}"))
    result = alicerce("validate", str(spec), "--format", "json", timeout=30)
    assert result.returncode == 2
    assert len(result.stdout) < 5_000
    [error] = json.loads(result.stdout)["errors"]
    assert error["rule"] == "AL014" and error["line"] == 12
    assert f"over the {MAX_SCALAR:,}-character limit" in error["message"]


def test_every_value_in_json_reports_is_shortened(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(REFERENCE.replace("owner: ml-platform@acme.example", f"owner: {'o' * 3000}"))
    result = alicerce("validate", str(spec), "--format", "json")
    [error] = json.loads(result.stdout)["errors"]
    assert error["path"] == "metadata.owner" and "at most 256 characters" in error["message"]
    assert len(error["value"]) < 100 and error["value"].endswith("(3,000 characters)")


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ("{team: " + "v" * 64 + "}", "label value is 64 characters, over the 63 Kubernetes allows"),
        ("{team: has space}", "is not valid: it must start and end with a letter or digit"),
        ("{Bad Key: x}", 'label key "Bad Key" is not valid'),
        ("{" + "k" * 64 + ": x}", "name part is 64 characters, over 63"),
        ("{UPPER.example/x: y}", "prefix must be a DNS subdomain"),
        ("{" + "p" * 120 + ".example/name: y}", "becomes an AWS tag key: at most 128 characters"),
    ],
)
def test_platform_labels_follow_kubernetes_and_aws_tag_rules(labels: str, message: str) -> None:
    found = errors(with_labels(labels))
    assert len(found) == 1 and message in found[0], found
    assert found[0].startswith("spec.yaml:12:")


def test_pool_labels_and_taints_follow_kubernetes_label_syntax() -> None:
    text = REFERENCE.replace("labels: {nvidia.com/gpu.clique: dc1-spod1}", "labels: {nvidia.com/gpu.clique: 'dc1 spod1; rm -rf /'}")
    found = errors(text)
    assert len(found) == 1 and ".labels.nvidia.com/gpu.clique: label value" in found[0], found
    taint = errors(REFERENCE.replace('{key: nvidia.com/gpu, value: "true"', "{key: 'nvidia.com/gpu x', value: \"true\""))
    assert any("taints[0].key" in e and "label key" in e for e in taint), taint


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        ("owner: ml-platform@acme.example", "owner: " + "o" * 257, "metadata.owner"),
        ("costCenter: CC-4410", "costCenter: CC 4410", "metadata.costCenter"),
        ("groups: [oidc:ml-research]", "groups: [" + "g" * 257 + "]", "tenancy.teams[0].groups[0]"),
    ],
)
def test_free_text_fields_have_a_length(old: str, new: str, path: str) -> None:
    assert old in REFERENCE
    found = errors(REFERENCE.replace(old, new, 1))
    assert len(found) == 1 and f"{path}:" in found[0], found


def test_the_reference_and_examples_stay_valid() -> None:
    for spec in [ROOT / "platform.yaml", *sorted((ROOT / "examples").glob("*.yaml"))]:
        if spec.name == "mistakes.yaml":
            continue
        assert check(load_file(spec), on=TODAY).errors == [], spec
