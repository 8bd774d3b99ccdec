"""Every number in a spec is finite and bounded (issue 22, defects 5 and 8).

Each case below once validated or crashed: ``.inf`` and ``1e400B`` capacities overflowed the FSx
sizing, ``rateGbps: 0`` divided by zero in plan, a 400-digit ``sequenceLength`` overflowed a float,
``retention: .nan`` crashed ``show`` and ``generate``, a port of 99999 crashed ``generate``, an
``.inf`` SLO threshold silently disabled its alert, and ``account: "*"`` validated. Each is now a
located error at validate, so every command that reads the spec exits 2 on it.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from alicerce.cli import build_app, run
from alicerce.rules.validate import check
from alicerce.spec.errors import SpecError, SpecInvalid, format_path
from alicerce.spec.loader import load_text
from alicerce.spec.units import parse_bytes, parse_count, parse_duration, parse_rate
from tests.conftest import ROOT, TODAY

REFERENCE = (ROOT / "platform.yaml").read_text("utf-8")
DIGITS_400 = "9" * 400


def errors(text: str) -> list[SpecError]:
    try:
        checked = check(load_text(text, "spec.yaml"), on=TODAY)
    except SpecInvalid as exc:
        return exc.errors
    return checked.errors


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


CASES = {
    # name: (text in the reference, its replacement, the path of the error, words of its message)
    "capacity-inf": ("capacity: 24TiB", "capacity: .inf", "storage[3].capacity", "finite"),
    "capacity-1e400": ("capacity: 24TiB", "capacity: 1e400B", "storage[3].capacity", "at most"),
    "capacity-400-digits": ("capacity: 24TiB", f"capacity: {DIGITS_400}", "storage[3].capacity", "at most"),
    "throughput-inf": ("throughput: 10GBps", "throughput: .inf", "storage[3].throughput", "finite"),
    "throughput-zero": ("throughput: 10GBps", "throughput: 0GBps", "storage[3].throughput", "greater than 0"),
    "rate-gbps-zero": ("rateGbps: 400", "rateGbps: 0", "networks.fabrics[1].onprem.rateGbps", "greater than or equal to 1"),
    "sequence-400-digits": ("sequenceLength: 8192", f"sequenceLength: {DIGITS_400}", "workloads[0].sequenceLength", "less than"),
    "retention-nan": ("  retention: 31d ", "  retention: .nan ", "monitoring.retention", "finite"),
    "retention-400-digits": (
        "  retention: 31d ",
        f"  retention: {DIGITS_400} ",
        "monitoring.retention",
        "at most",
    ),
    "deadline-huge": ("deadline: 60d", "deadline: 99999999999999999999d", "workloads[0].deadline", "at most"),
    "tokens-inf": ("tokens: 1T", "tokens: .inf", "workloads[0].tokens", "finite"),
    "endpoint-port": ("k8s.dc1.acme.example:6443", "k8s.dc1.acme.example:99999", "environments.prod.sites[1].controlPlaneEndpoint", "port"),
    "slo-threshold-inf": ("threshold: 1s ", "threshold: .inf", "monitoring.slos[0].threshold", "finite"),
    "slo-threshold-nan": ("threshold: 20480s", "threshold: .nan", "monitoring.slos[1].threshold", "finite"),
    # a schedule of one run in 10^300 quarters made an owned pool's cost per used GPU-hour a 300-digit figure
    "runs-per-quarter-tiny": ("runsPerQuarter: 1  ", "runsPerQuarter: 1e-300", "workloads[0].runsPerQuarter", "or equal to 0.01"),
    "account-star": ('account: "111111111111"', 'account: "*"', "environments.dev.sites[0].account", "12 digits"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_extreme_numbers_are_located_errors(case: str) -> None:
    old, new, path, words = CASES[case]
    assert old in REFERENCE
    text = REFERENCE.replace(old, new, 1)
    found = errors(text)
    assert found, f"{case}: validates"
    mine = [e for e in found if format_path(e.path) == path]
    assert mine, [e.render() for e in found]
    error = mine[0]
    assert error.span.line == line_of(text, new.split("\n")[0]), error.render()
    assert words in error.message, error.render()


@pytest.mark.parametrize("command", ["validate", "show", "plan"])
@pytest.mark.parametrize("case", ["capacity-inf", "rate-gbps-zero", "sequence-400-digits", "retention-nan", "endpoint-port"])
def test_every_command_exits_2_with_a_location(case: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new, path, _ = CASES[case]
    spec = tmp_path / "spec.yaml"
    spec.write_text(REFERENCE.replace(old, new, 1))
    args = [command, str(spec)] if command == "validate" else [command, str(spec), "--env", "prod"]
    code = run(build_app(), args)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert f"{spec}:" in out + err and path in out + err
    assert "Traceback" not in out + err


def test_generate_refuses_before_writing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(REFERENCE.replace("k8s.dc1.acme.example:6443", "k8s.dc1.acme.example:99999"))
    code = run(build_app(), ["generate", str(spec), "--env", "prod", "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "controlPlaneEndpoint" in out and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("parse", "value"),
    [
        (parse_bytes, math.inf),
        (parse_bytes, math.nan),
        (parse_bytes, "1e400B"),
        (parse_bytes, "1e999999999PiB"),
        (parse_bytes, 10**400),
        (parse_rate, math.inf),
        (parse_rate, "1e400GBps"),
        (parse_rate, 10**400),
        (parse_count, math.inf),
        (parse_count, math.nan),
        (parse_count, "1e999999999T"),
        (parse_count, 10**400),
        (parse_duration, math.nan),
        (parse_duration, math.inf),
        (parse_duration, 10**400),
        (parse_duration, DIGITS_400 + "d"),
    ],
    ids=lambda value: value.__name__ if callable(value) else repr(value)[:20],
)
def test_parsers_refuse_what_is_not_a_finite_bounded_number(parse: object, value: object) -> None:
    assert callable(parse)
    with pytest.raises(ValueError, match=r"finite|at most"):
        parse(value)


def test_preview_of_an_onprem_site_without_kubeconfig_secret_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The Kubernetes layer reaches an existing cluster only through the secret its site names: preview
    crashed inside the Pulumi program (RunError traceback); now it is a missing key at the site."""
    old = "        kubeconfigSecret: dc1Kubeconfig\n"
    assert old in REFERENCE
    text = REFERENCE.replace(old, "")
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    code = run(build_app(), ["preview", str(spec), "--env", "prod"])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    site = line_of(text, "      - name: dc1\n")  # the site's mapping starts after "- ", column 9
    assert out.startswith(f"{spec}:{site}:9: error[AL101]: [env prod] environments.prod.sites[1].kubeconfigSecret: site dc1 needs"), out
    assert "Traceback" not in out + err


def test_diff_of_an_onprem_site_without_kubeconfig_secret_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """diff runs the same offline plan on both sides: the same located error, not the program's RunError."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(REFERENCE.replace("        kubeconfigSecret: dc1Kubeconfig\n", ""))
    code = run(build_app(), ["diff", str(ROOT / "platform.yaml"), str(spec), "--env", "prod"])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert f"{spec}:" in out and "environments.prod.sites[1].kubeconfigSecret" in out


def test_a_stack_with_the_kubernetes_layer_refuses_a_site_without_kubeconfig_secret() -> None:
    """`pulumi up` checks the same before it declares anything (the program's pre-checks)."""
    from alicerce.emit.pulumi.stack import StackSettings
    from alicerce.rules.validate import validated

    document = load_text(REFERENCE.replace("        kubeconfigSecret: dc1Kubeconfig\n", ""), "spec.yaml")
    rp = validated(document, "prod")
    admins = ("arn:aws:iam::222222222222:role/deployer",)
    problems = StackSettings(admins, ("10.0.0.0/8",)).problems(rp)
    assert any("site dc1 names no kubeconfigSecret" in p for p in problems), problems
    assert not any("kubeconfigSecret" in p for p in StackSettings(admins, ("10.0.0.0/8",), ("cloud",)).problems(rp))
