"""Issue 16, item 1: `pip install alicerce` gives a working tool, with no checkout anywhere near it.

The wheel is built from the files git tracks (plus new, unignored ones), installed into a fresh
virtual environment outside the checkout, and driven from a folder outside it: init, validate,
plan, preview, generate (the Ansible roles and templates come from the wheel), rules (the rule
fixtures too), and the Pulumi program's entry point as a platform repository's ``__main__.py``
calls it.

The environment's dependencies are the locked ones. By default they are hard-linked from the
test run's own environment (which ``make`` installs from ``requirements.lock``): seconds instead
of minutes, and ``pip check`` then proves the wheel's declared requirements are met by the lock.
``ALICERCE_WHEEL_INSTALL=index`` installs them instead as a user would, ``pip install
--require-hashes -r requirements.lock`` from the configured package index, then the wheel
(about 2.5 minutes here).
One environment serves the whole session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

SITE = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"


def _sources(into: Path) -> Path:
    """A copy of the project as a release would see it: tracked files and new ones git does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copy2(source, target)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = _sources(tmp_path_factory.mktemp("source"))
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)],
        check=True,
        capture_output=True,
    )
    (built,) = dist.glob("alicerce-*.whl")
    return built


@pytest.fixture(scope="session")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment outside the checkout with the wheel and the locked dependencies; returns its bin/."""
    root = tmp_path_factory.mktemp("venv")
    python = root / "bin" / "python"
    if os.environ.get("ALICERCE_WHEEL_INSTALL") == "index":
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
        # the hashed lock first (a constraints file with hashes would demand one for the wheel too), then the wheel alone
        locked = [str(python), "-m", "pip", "install", "-q", "--require-hashes", "-r", str(ROOT / "requirements.lock")]
        subprocess.run(locked, check=True, capture_output=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True)
    else:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
        ours = Path(sys.prefix) / SITE
        target = root / SITE
        for entry in ours.iterdir():
            if entry.name.startswith(("alicerce", "__editable__")):  # the checkout's own editable install stays behind
                continue
            if entry.is_dir():
                shutil.copytree(entry, target / entry.name, copy_function=_link_or_copy, symlinks=True)
            else:
                _link_or_copy(str(entry), str(target / entry.name))
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True, capture_output=True)
    check = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    return root / "bin"


def _run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(COLUMNS="120", PATH=f"{venv}{os.pathsep}{env.get('PATH', '')}")
    return subprocess.run([str(venv / "alicerce"), *args], cwd=cwd, capture_output=True, text=True, env=env, check=False, timeout=300)


def test_wheel_carries_every_package_file(wheel: Path) -> None:
    """Templates, roles, catalog data and rule fixtures are package data: everything git tracks under alicerce/."""
    names = set(zipfile.ZipFile(wheel).namelist())
    tracked = subprocess.run(["git", "ls-files", "alicerce"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert [name for name in tracked if name not in names] == []
    assert {"alicerce/emit/templates/ansible/site.yml.j2", "alicerce/rules/fixtures/AL212.yaml", "alicerce/catalog/data/gpus.yaml"} <= names
    assert any(name.endswith("licenses/LICENSE") for name in names)
    # the reference examples, for `alicerce init --example` (setup.py copies them in)
    assert {f"alicerce/examples/{spec.name}" for spec in (ROOT / "examples").glob("*.yaml")} <= names


def test_installed_alicerce_runs_outside_the_checkout(venv: Path, tmp_path: Path) -> None:
    code = "import alicerce; print(alicerce.__file__)"
    where = subprocess.run([str(venv / "python"), "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert Path(where.stdout.strip()).is_relative_to(venv.parent), where.stdout + where.stderr
    assert _run(venv, "--version", cwd=tmp_path).stdout == f"alicerce {version('alicerce')}\n"

    made = _run(venv, "init", "repo", "--name", "wheel-test", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    repo = tmp_path / "repo"
    for args in (["validate"], ["plan"], ["rules", "AL212"]):
        result = _run(venv, *args, cwd=repo)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
    preview = json.loads(_run(venv, "preview", "--format", "json", cwd=repo).stdout)
    assert preview["counts"]["resources"] > 0
    assert _run(venv, "generate", "--out", "out", cwd=repo).returncode == 0
    assert (repo / "out" / ".alicerce" / "manifest.json").is_file()

    # an on-prem platform started from the example the wheel ships: the generated Ansible project comes from the
    # wheel's roles and templates
    started = _run(venv, "init", "superpod", "--example", "onprem-superpod", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    assert "alicerce apply onprem" in started.stdout
    generated = _run(venv, "generate", "--out", "out", cwd=tmp_path / "superpod")
    assert generated.returncode == 0, generated.stderr
    ansible = tmp_path / "superpod" / "out" / "ansible"
    assert (ansible / "site.yml").is_file() and (ansible / "roles" / "nvidia_driver" / "tasks" / "main.yml").is_file()
    assert yaml.safe_load((ansible / "site.yml").read_text())


def test_the_pulumi_program_runs_from_the_installed_package(venv: Path, tmp_path: Path) -> None:
    """What a platform repository's __main__.py runs, under Pulumi's mock engine, with the spec beside Pulumi.yaml."""
    shutil.copy(ROOT / "platform.yaml", tmp_path / "platform.yaml")
    script = (
        "import pulumi\n"
        "from alicerce.emit.pulumi.program import main\n"
        "from alicerce.rules.validate import validated\n"
        "from alicerce.run.preview import run_preview\n"
        "from alicerce.spec.loader import load_file\n"
        "pulumi.runtime.set_all_config({'alicerce:spec': 'platform.yaml', 'alicerce:environment': 'dev',\n"
        "    'alicerce:layers': '[\"cloud\"]',\n"
        "    'alicerce:adminPrincipals': '[\"arn:aws:iam::111111111111:role/platform-admins\"]'})\n"
        "result = run_preview(validated(load_file('platform.yaml'), 'dev'), lambda _: main() or {})\n"
        "print(sum(1 for r in result.resources if r.type == 'aws:eks/cluster:Cluster'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(
        [str(venv / "python"), "-c", script], cwd=tmp_path, capture_output=True, text=True, env=env, check=False, timeout=300
    )
    assert result.stdout.split()[-1:] == ["1"], result.stderr[-2000:]
