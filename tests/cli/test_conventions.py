"""Issue 16: output that reads well everywhere, a stable machine contract, and the usual CLI conventions.

Every test drives the installed `alicerce` script as a user does (subprocesses: a pipe, COLUMNS=80).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from importlib.metadata import version
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from alicerce.catalog import load_catalog
from alicerce.cli.documents import DOCUMENTS, document_schema_text
from tests.conftest import ALICERCE, ROOT, alicerce

OUTPUT_SCHEMAS = ROOT / "schema" / "output"
ONE_ENV = str(ROOT / "examples" / "minimal.yaml")  # a single environment: dev


def run(*args: str, columns: int | None = 200, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run alicerce with stdout a pipe; ``columns=None`` leaves COLUMNS unset, as in a CI log."""
    return alicerce(*args, cwd=cwd, env={"COLUMNS": None if columns is None else str(columns)}, timeout=120)


# -- item 3: tables that never cut what a user types, in any width


TABLES = {
    "plan": (["plan"], ["llm-pretrain", "code-assistant-ft", "tokenize-corpus", "onprem-h100", "H100-SXM5-80GB", "L40S-48GB"]),
    "instances": (["catalog", "instances"], [i.type for i in load_catalog().instances]),
    "gpus": (["catalog", "gpus"], [g.id for g in load_catalog().gpus]),
    "rules": (["rules"], ["AL000", "production-private-endpoint", "AL291"]),
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_tables_keep_every_id_whole_at_80_columns(name: str) -> None:
    args, ids = TABLES[name]
    result = run(*args, columns=80)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "…" not in result.stdout
    assert max(len(line) for line in lines) <= 80
    words = set(re.findall(r"[\w.-]+", result.stdout))
    assert [i for i in ids if i not in words] == []


@pytest.mark.parametrize("name", sorted(TABLES))
def test_tables_in_a_pipe_are_one_line_per_row_without_boxes(name: str) -> None:
    args, ids = TABLES[name]
    result = run(*args, columns=None)
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout and not set("┃│┏━") & set(result.stdout)
    words = set(re.findall(r"[\w.-]+", result.stdout))
    assert [i for i in ids if i not in words] == []


def test_a_piped_row_is_one_line() -> None:
    (row,) = [line for line in run("catalog", "instances", columns=None).stdout.splitlines() if line.startswith("p5.48xlarge ")]
    assert row.split()[:4] == ["p5.48xlarge", "8", "x", "H100-SXM5-80GB"] and row.endswith("us-east-1")


def test_wide_terminal_keeps_the_boxed_table() -> None:
    result = run("catalog", "gpus", columns=220)
    assert "┃" in result.stdout and "H100-SXM5-80GB" in result.stdout


def test_show_prints_the_spec_units_and_json_keeps_base_units() -> None:
    text = yaml.safe_load(run("show", "--env", "prod").stdout)
    tiers = {t["name"]: t for t in text["storage"]}
    assert (tiers["datasets"]["capacity"], tiers["datasets"]["throughput"]) == ("48TiB", "12GBps")
    assert tiers["checkpoints"]["retention"] == "30d"
    workloads = {w["name"]: w for w in text["workloads"]}
    assert workloads["llm-pretrain"]["deadline"] == "60d"
    data = json.loads(run("show", "--env", "prod", "--format", "json").stdout)
    tiers = {t["name"]: t for t in data["storage"]}
    assert (tiers["datasets"]["capacity"], tiers["datasets"]["throughput"]) == (48 * 2**40, 12e9)
    assert tiers["checkpoints"]["retention"] == 30 * 86400


def test_every_error_is_one_plain_line() -> None:
    for args in (["plan", "--bogus"], ["show", "--env"], ["catalog", "tables"], ["show", "--env", "prdo"], ["rules", "AL999"]):
        result = run(*args)
        assert result.returncode == 2, args
        text = result.stdout + result.stderr
        assert not set("╭╮╰╯│─") & set(text), text
        assert "Traceback" not in text
        assert re.search(r"^(error: |platform\.yaml:\d+:\d+: error\[)", text, re.MULTILINE), text


def test_preview_counts_agree_between_text_and_json() -> None:
    """And the JSON validates against its committed schema: `preview` is that test's case too, checked here on the
    same run (each is a Pulumi preview in a process of its own, ~3 CPU-s)."""
    text = run("preview", ONE_ENV)
    data = json.loads(run(*JSON_COMMANDS["preview"][0]).stdout)
    validate_document("preview", data)
    components = sum(1 for r in data["resources"] if r["type"].startswith("alicerce:"))
    assert data["counts"] == {"resources": len(data["resources"]) - components, "components": components}
    assert f"{data['counts']['resources']} resources in {components} components" in text.stdout


# -- item 4: one casing, a schemaVersion, committed schemas that outputs validate against

JSON_COMMANDS = {
    "validate": [["validate", "--format", "json"], ["validate", "examples/mistakes.yaml", "--format", "json"]],
    "plan": [["plan", "--format", "json"], ["plan", "--format", "json", "--explain", "--tco"]],
    "plan-checks": [["plan", "--checks", "--format", "json"]],
    "versions": [["versions", "--env", "prod", "--format", "json"]],
    "diff": [["diff", ONE_ENV, str(ROOT / "examples" / "aws-only.yaml"), "--no-plan", "--format", "json"]],
    "show": [["show", "--env", "prod", "--format", "json"], ["show", ONE_ENV, "--format", "json"]],
    "preview": [["preview", ONE_ENV, "--format", "json"]],
    "catalog": [["catalog", section, "--format", "json"] for section in ("gpus", "instances", "versions")],
    "rules": [["rules", "--format", "json"], ["rules", "AL290", "--format", "json"]],
    "error": [["rules", "AL999", "--format", "json"], ["generate", "--out", ".", "--format", "json"]],
    # a folder that does not exist: every file is missing (exit 1), nothing is written
    "generate-check": [["generate", "--check", "--env", "dev", "--out", "/nonexistent/alicerce-check", "--format", "json"]],
}


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_committed_output_schemas_are_fresh(name: str) -> None:
    committed = OUTPUT_SCHEMAS / f"{name}.schema.json"
    assert committed.is_file() and committed.read_text("utf-8") == document_schema_text(name), "run `make schema` and commit schema/output/"


def validate_document(name: str, document: Any) -> None:
    schema = json.loads((OUTPUT_SCHEMAS / f"{name}.schema.json").read_text("utf-8"))
    assert next(iter(document)) == "schemaVersion" and document["schemaVersion"] == 1
    jsonschema.Draft202012Validator(schema).validate(document)


# preview's document is validated by test_preview_counts_agree_between_text_and_json, on the run it checks
@pytest.mark.parametrize("name", sorted(set(JSON_COMMANDS) - {"preview"}))
def test_json_outputs_validate_against_their_committed_schemas(name: str) -> None:
    for args in JSON_COMMANDS[name]:
        validate_document(name, json.loads(run(*args).stdout))


def _property_names(node: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(node, dict):
        names |= set(node.get("properties", {}))
        for value in node.values():
            names |= _property_names(value)
    elif isinstance(node, list):
        for value in node:
            names |= _property_names(value)
    return names


def test_every_json_key_is_camel_case() -> None:
    names = set().union(*(_property_names(json.loads(p.read_text("utf-8"))) for p in OUTPUT_SCHEMAS.glob("*.json")))
    assert sorted(n for n in names if not re.fullmatch(r"[a-z][a-zA-Z0-9]*|\$patch", n)) == []


def test_json_alias_is_hidden_deprecated_and_still_works() -> None:
    result = run("rules", "--json")
    assert json.loads(result.stdout)["schemaVersion"] == 1
    assert "--json is deprecated" in result.stderr
    assert "--json" not in run("rules", "--help").stdout


def test_every_command_that_prints_a_result_takes_format() -> None:
    from typer.main import get_command

    from alicerce.cli import build_app

    group = get_command(build_app())
    commands = dict(group.commands)  # type: ignore[attr-defined]
    commands.update({f"apply {n}": c for n, c in commands.pop("apply").commands.items()})
    without = {name for name, cmd in commands.items() if not any("--format" in p.opts for p in cmd.params)}
    assert without == {"schema", "docs"}  # a JSON Schema, Markdown pages


# -- item 5: --version, completion, --env, examples, rules ID


def test_version() -> None:
    result = run("--version")
    assert (result.returncode, result.stdout) == (0, f"alicerce {version('alicerce')}\n")


def test_shell_completion_completes_commands() -> None:
    env = {**os.environ, "_ALICERCE_COMPLETE": "complete_bash", "COMP_WORDS": "alicerce pre", "COMP_CWORD": "1"}
    result = subprocess.run([str(ALICERCE)], capture_output=True, text=True, env=env, check=False, timeout=60)
    assert result.stdout.split() == ["preview"]
    # --show-completion takes no shell name: typer detects the shell of the process tree it runs in (under `make
    # check`'s sh it refuses: "Shell sh not supported"). typer's switch for tests turns detection off and lets the
    # option name the shell, so the bash script is asked for whatever runs the suite.
    shown = alicerce("--show-completion", "bash", env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert "_alicerce_completion" in shown.stdout, shown.stderr


def test_env_is_optional_when_the_spec_has_one_environment(tmp_path: Path) -> None:
    assert yaml.safe_load(run("show", ONE_ENV).stdout)["environment"] == "dev"
    assert run("generate", ONE_ENV, "--out", str(tmp_path / "out")).returncode == 0
    several = run("show", str(ROOT / "platform.yaml"))
    assert several.returncode == 2 and "has 2 environments (dev, prod)" in several.stderr and "--env" in several.stderr


def test_every_help_has_examples() -> None:
    from typer.main import get_command

    from alicerce.cli import build_app

    group = get_command(build_app())
    names = dict(group.commands)  # type: ignore[attr-defined]
    commands = [*(n for n in names if n != "apply"), *(f"apply {n}" for n in names["apply"].commands)]
    assert {"init", "diff", "versions", "apply onprem"} <= set(commands)
    missing = [c for c in commands if "Examples:" not in run(*c.split(), "--help").stdout]
    assert missing == [] and "Examples:" in run("--help").stdout


def test_rules_explains_one_rule_with_its_fixtures() -> None:
    text = run("rules", "AL212", columns=None)
    assert text.returncode == 0
    assert "AL212 efa-single-zone" in text.stdout and "passes: " in text.stdout and "fails: " in text.stdout
    assert "aws: {zone: us-east-1c}" in text.stdout  # the snippet as the fixture writes it
    assert re.search(r"-> AL212\.yaml:\d+:\d+: error\[AL212\]", text.stdout)
    data = json.loads(run("rules", "al212", "--format", "json").stdout)
    assert {e["kind"] for e in data["examples"]} == {"pass", "fail"}
    assert all(e["errors"] for e in data["examples"] if e["kind"] == "fail")
    unknown = run("rules", "XL212")
    assert unknown.returncode == 2 and 'did you mean "AL212"?' in unknown.stderr


def test_file_and_schema_ids_come_from_one_table() -> None:
    """Every AL0xx/AL1xx id the code raises is in the table `alicerce rules` lists, and nothing else is."""
    from alicerce.spec.rule_ids import FILE_AND_SCHEMA_IDS

    raised = set()
    for path in (ROOT / "alicerce").rglob("*.py"):
        if "ansible" not in path.parts and path.name != "rule_ids.py":
            raised |= set(re.findall(r'"(AL[01]\d\d)"', path.read_text("utf-8")))
    table = {e.id for e in FILE_AND_SCHEMA_IDS}
    assert raised - table == set() and table - raised == set()


def test_an_error_names_its_environment_the_same_in_every_command() -> None:
    """Issue 16: the same error had its environment in `validate` JSON and null in `plan --json`."""
    spec = str(ROOT / "tests" / "data" / "bad" / "names-and-references.yaml")
    everywhere = json.loads(run("validate", spec, "--format", "json").stdout)["errors"]
    in_prod = [(e["line"], e["rule"], e["message"], e["environment"]) for e in everywhere if e["environment"] == "prod"]
    assert in_prod
    for command in ("plan", "show"):
        errors = json.loads(run(command, spec, "--env", "prod", "--format", "json").stdout)["errors"]
        found = [(e["line"], e["rule"], e["message"], e["environment"]) for e in errors]
        assert [e for e in in_prod if e not in found] == [], command
