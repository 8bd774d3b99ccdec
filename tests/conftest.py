"""Shared test helpers: paths, a fixed date, and spec loading."""

from __future__ import annotations

import atexit
import datetime
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import IO, TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from alicerce.resolve.model import ResolvedPlatform

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
TODAY = datetime.date(2026, 12, 2)

# waiver expiry is checked against this date in every test, including CLI subprocesses
os.environ["ALICERCE_TODAY"] = TODAY.isoformat()
# the validate result cache of the tests lives and dies with the test run
# (each xdist worker and the controller import this module once; each removes its own folder on exit)
_CACHE_DIR = tempfile.mkdtemp(prefix="alicerce-test-cache-")
os.environ["ALICERCE_CACHE_DIR"] = _CACHE_DIR
atexit.register(shutil.rmtree, _CACHE_DIR, ignore_errors=True)


def compile_package() -> None:
    """Write the bytecode of alicerce's modules beside them, once per run (cheap when it is current).

    The suite starts the `alicerce` script hundreds of times. Under PYTHONDONTWRITEBYTECODE (set on this
    machine and in many CI images) nothing writes it, and each of those processes compiled every alicerce
    module it imported from source: ~0.6 CPU-s of a ~1.6 CPU-s `generate`. An installed package has
    its bytecode; the subprocesses now read it too. Ansible's modules and filter plugins are left alone:
    Ansible loads those itself.
    """
    import compileall
    import re

    compileall.compile_dir(ROOT / "alicerce", quiet=2, rx=re.compile(r"[/\\]alicerce[/\\]ansible[/\\]"))


compile_package()
# pytest caches each test module with its asserts rewritten (tests/**/__pycache__/*-pytest-*.pyc) only where bytecode
# may be written; under PYTHONDONTWRITEBYTECODE every pytest process (the run and each xdist worker) rewrote all ~300
# test modules again: a collection took ~12.6 CPU-s against ~5.9 with the cache. The modules imported from here on
# (the test modules, those they import) may write it; pytest reads a cached one only if it matches the source's hash.
sys.dont_write_bytecode = False
# ... and so may the processes the tests start (the `alicerce` script, ansible-playbook): .venv is installed without
# its bytecode (Makefile), each module's is written by the first process that imports it, under `make test` or not.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def pytest_configure(config: pytest.Config) -> None:
    # keeps each xdist_group on one worker under pytest 9.2 (see tests/xdist_groups.py); `-p` may have loaded it already
    from tests import xdist_groups

    if not config.pluginmanager.is_registered(xdist_groups):
        config.pluginmanager.register(xdist_groups, "alicerce-xdist-groups")


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def prod() -> ResolvedPlatform:
    """The reference platform's prod environment, validated once per worker."""
    from alicerce.rules.validate import validated
    from alicerce.spec.loader import load_file

    return validated(load_file(ROOT / "platform.yaml", "platform.yaml"), "prod")


@pytest.fixture(scope="session")
def prod_files(prod: ResolvedPlatform) -> Mapping[str, str]:
    """The prod tree as `alicerce generate` renders it (path -> text), once per worker for the tests that only
    read it. Read-only: a test that wants to change a file copies it (item assignment raises TypeError)."""
    from alicerce.emit.tree import render_tree

    return MappingProxyType(render_tree(prod))


ALICERCE = Path(sys.executable).with_name("alicerce")


# The commands `alicerce()` runs inside the test process: each a pure function of its arguments, files and
# environment. `apply`, `preview` and `diff` (Ansible's process groups and signal handlers, Pulumi's runtime state)
# always run as a subprocess, as does any run with a fault injected (ALICERCE_FAULT kills its own process).
IN_PROCESS = frozenset({"validate", "show", "plan", "generate", "schema", "docs", "rules", "versions", "catalog", "costs", "init"})


def alicerce(
    *args: str, cwd: Path = ROOT, env: Mapping[str, str | None] | None = None, timeout: float = 60, process: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run `alicerce` with stdout and stderr pipes: its exit code and output as a user's shell sees them.

    ``env`` adds to the environment (COLUMNS=200 unless it says otherwise; None removes a variable). The
    command runs in the test process (~1 CPU-s less per call than starting the script: no interpreter, no
    imports) where it allows it; ``process=True`` starts the installed script, for the tests of the entry
    point itself. Without COLUMNS a table's width comes from the terminal, so such a run is a subprocess too.
    """
    merged = {name: value for name, value in {**os.environ, "COLUMNS": "200", **(env or {})}.items() if value is not None}
    if process or not args or args[0] not in IN_PROCESS or "ALICERCE_FAULT" in merged or "COLUMNS" not in merged:
        return subprocess.run([str(ALICERCE), *args], cwd=cwd, capture_output=True, text=True, env=merged, check=False, timeout=timeout)
    return _in_process(list(args), cwd, merged)


def _in_process(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """What `alicerce.cli.main` does, with the process's state (cwd, environment, streams, argv) swapped for the call."""
    import io
    import traceback

    from alicerce.cli import build_app, run
    from alicerce.cli.fastpath import serve

    saved = (os.getcwd(), dict(os.environ), sys.argv, sys.stdin, sys.stdout, sys.stderr)
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True)
    try:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")  # as main() sets it
        sys.argv, sys.stdin, sys.stdout, sys.stderr = ["alicerce", *argv], io.StringIO(), out, err
        try:
            code = serve(argv)
            if code is None:
                code = run(build_app(), argv)
        except SystemExit as exc:  # what the interpreter makes of sys.exit(...)
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        except Exception:  # an uncaught error: the traceback and exit code 1, as from the script
            traceback.print_exc()
            code = 1
    finally:
        cwd_before, env_before, sys.argv, sys.stdin, sys.stdout, sys.stderr = saved
        os.environ.clear()
        os.environ.update(env_before)
        os.chdir(cwd_before)

    def text(stream: io.TextIOWrapper) -> str:  # decoded with universal newlines, as subprocess.run(text=True)
        stream.flush()
        raw = stream.buffer.getvalue().decode("utf-8", errors="replace")  # type: ignore[attr-defined]
        return raw.replace("\r\n", "\n").replace("\r", "\n")

    return subprocess.CompletedProcess(["alicerce", *argv], code, text(out), text(err))


class Forked:
    """`alicerce` run in a forked child of the test process: a process of its own, without an interpreter start.

    For the tests whose subject is the process boundary itself (a run that SIGKILLs itself at a fault point,
    two runs racing for the lock) but not the entry point: the child has its own pid, its own open file
    descriptions (so its own flock) and dies alone, as the installed script would; it skips the ~0.6 CPU-s of
    start-up and imports the test process already paid. Started at once; `wait()` gives what `alicerce()` gives
    (a killed child: returncode -signal and no output, as nothing it buffered was flushed). Fault injection
    (ALICERCE_FAULT) goes through, unlike `alicerce()`, which sends such runs to a subprocess.
    """

    def __init__(self, *args: str, cwd: Path = ROOT, env: Mapping[str, str | None] | None = None) -> None:
        merged = {name: value for name, value in {**os.environ, "COLUMNS": "200", **(env or {})}.items() if value is not None}
        self._start(["alicerce", *args], lambda: _in_process(list(args), cwd, merged))

    @classmethod
    def call(cls, function: Callable[[], object], env: Mapping[str, str] | None = None) -> Forked:
        """``function()`` in a forked child, ``env`` added to its environment: exit code 0 when it returns, 1 and
        its traceback on stderr when it raises (what `python -c` running it would give)."""
        forked = cls.__new__(cls)

        def run() -> subprocess.CompletedProcess[str]:
            import traceback

            os.environ.update(env or {})
            try:
                function()
            except Exception:
                return subprocess.CompletedProcess([], 1, "", traceback.format_exc())
            return subprocess.CompletedProcess([], 0, "", "")

        forked._start([getattr(function, "__name__", "function")], run)
        return forked

    def _start(self, args: list[str], run: Callable[[], subprocess.CompletedProcess[str]]) -> None:
        self.args = args
        # files, not pipes: the child writes its output once, at its end, and nothing waits on a full pipe
        # (closed by wait(), which every caller makes)
        self._out, self._err = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115
        self.pid = os.fork()
        if self.pid == 0:  # the child: never return into pytest, never run the test process's atexit handlers
            code = 70
            try:
                result = run()
                self._out.write(result.stdout.encode("utf-8"))
                self._err.write(result.stderr.encode("utf-8"))
                self._out.flush()
                self._err.flush()
                code = result.returncode
            finally:
                os._exit(code)

    def wait(self, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        deadline = time.monotonic() + timeout
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.01)
        code = os.waitstatus_to_exitcode(status)  # -N for a child killed by signal N, as subprocess reports it

        def text(file: IO[bytes]) -> str:
            file.seek(0)
            with file:
                return file.read().decode("utf-8", errors="replace")

        return subprocess.CompletedProcess(self.args, code, text(self._out), text(self._err))


# Tests that share an expensive fixture run on one xdist worker (`make test` runs `--dist loadgroup`),
# so that it is built once per run rather than once per worker: the Pulumi previews, the wheel and
# its virtual environment, the converged rootfs and the signed apt repository.
SHARED_GROUPS = {
    "tests/pulumi/": "pulumi-previews",
    "tests/targets/aws/": "aws-previews",
    "tests/test_wheel.py": "wheel",
}
# The first fixture a test uses, in this order, names its group. The converges are two groups, each on one
# worker: the converged image and the runs on copies of it, and the runs from a fresh copy of the rootfs
# (the operator-owned driver's two runs, check mode, the apt key). Every run works on its own copy of the
# cached rootfs, so the two workers never share one; the signed apt repository is cached per user, as the rootfs.
SHARED_FIXTURES = {"converged": "converge", "converged_copy": "converge", "aptrepo": "converge-fresh"}
# What `make check` leaves out (`-m "not slow"`): every test of these groups, those using these fixtures,
# and these modules and tests (several seconds each: real Ansible runs, many `alicerce generate`
# processes, Pulumi previews of variants, ansible-lint). tests/test_conftest.py keeps the names current.
SLOW_GROUPS = {"pulumi-previews", "aws-previews", "wheel", "converge", "converge-fresh"}
SLOW_FIXTURES = {"rootfs", "node_root"}
SLOW_TESTS = (
    "tests/ansible/test_rolling.py",
    # promtool over simulated weeks or a month of series, the bench script, a pytest run of its own (15-55 s each)
    "tests/emit/kube/test_costs.py::test_budget_alerts_fire_at_the_thresholds_and_not_below",
    "tests/emit/kube/test_costs.py::test_budget_alerts_count_the_calendar_month_as_the_guard_and_finance_do",
    "tests/run/test_chargeback.py::test_the_month_is_summed_hour_by_hour_per_team_cost_centre_and_workload",
    "tests/run/test_chargeback.py::test_a_month_prometheus_holds_in_part_names_the_missing_days_and_needs_partial",
    "tests/run/test_chargeback.py::test_each_figure_is_whole_only_where_its_own_source_answered",
    "tests/plan/test_calibration.py::test_the_readme_accuracy_table_is_the_bench_scripts",
    "tests/emit/kube/test_diagnoses.py::test_slo_burn_rate_pages_on_a_fast_burn_and_not_on_a_slow_trickle",
    "tests/test_conftest.py::test_loadgroup_keeps_each_group_on_one_worker",
    "tests/emit/test_output_safety.py",
    "tests/run/test_diff.py",
    "tests/ansible/test_apply_cli.py::test_an_apply_with_cloud_keys_in_the_environment_writes_none_of_them",
    "tests/ansible/test_apply_cli.py::test_apply_fails_on_a_host_without_the_promised_gpus",
    "tests/ansible/test_apply_cli.py::test_cluster_acceptance_waits_for_the_device_plugin_then_accepts",
    "tests/ansible/test_policy_change.py",
    "tests/ansible/test_roles.py::test_generated_tree_passes_ansible_lint_production",
    "tests/catalog/test_user_catalog.py::test_outputs_mark_user_provided_entries",
    "tests/cli/test_cli.py::test_init_creates_a_valid_repository",
    "tests/cli/test_conventions.py::test_json_outputs_validate_against_their_committed_schemas",
    "tests/cli/test_conventions.py::test_preview_counts_agree_between_text_and_json",
    "tests/cli/test_gitops.py::test_generate_check_lists_stale_files_and_ci_dir_writes_the_workflows",
    "tests/cli/test_gitops.py::test_the_pull_request_flow_on_a_local_repository",
    "tests/cli/test_fuzz_pipeline.py::test_validate_show_and_plan_never_crash",
    "tests/cli/test_init.py::test_every_alicerce_command_of_the_readme_quickstart_runs",
    "tests/cli/test_init.py::test_fill_builds_the_repository_around_the_spec_already_there",
    "tests/cli/test_init.py::test_fill_writes_only_the_missing_files",
    "tests/cli/test_init.py::test_generate_check_and_the_offline_preview_run_on_it",
    "tests/cli/test_init.py::test_init_refuses_to_replace_any_file_and_names_it",
    "tests/cli/test_init_targets.py::test_a_repository_starts_from_a_reference_example",
    "tests/cli/test_init_targets.py::test_an_owned_starter_validates_plans_and_generates",
    "tests/cli/test_paths.py::test_a_corrupt_manifest_is_a_user_error",
    "tests/cli/test_paths.py::test_apply_with_a_file_where_its_run_folder_goes_is_refused_before_any_work",
    "tests/cli/test_paths.py::test_apply_workdir_under_a_file_is_refused",
    "tests/cli/test_paths.py::test_init_into_the_empty_current_folder_writes_in_place",
    "tests/cli/test_result_cache.py::test_a_replay_is_identical_to_the_full_check",
    "tests/emit/gitops/test_ci.py::test_actionlint_accepts_the_workflows",
    "tests/emit/gitops/test_ci.py::test_actionlint_catches_a_broken_workflow",
    "tests/emit/gitops/test_golden.py::test_generate_is_byte_identical_across_hash_seeds_time_zones_and_locales",
    "tests/emit/test_generate.py::test_generate_is_byte_identical_and_atomic",
    "tests/emit/test_output_review.py::test_an_edit_made_while_the_new_tree_is_staged_stops_the_swap",
    "tests/plan/test_calibration.py::test_refitting_the_roofline_gives_the_catalog_efficiencies",
    "tests/rules/test_environment_scaling.py::test_validate_work_grows_linearly_with_environments",
    "tests/run/test_ansible_runner.py::test_every_stage_and_every_run_sees_only_its_own_settings",
    "tests/plan/test_platform_plan.py::test_cli_fail_on_explain_json_and_checks",
    "tests/plan/test_platform_plan.py::test_cli_text_fits_100_columns_and_charts_are_deterministic",
    "tests/plan/test_tco.py::test_cloud_cost_is_monotone_in_price_held_and_capped",
    "tests/spec/test_bounds.py::test_shell_text_in_host_names_never_reaches_the_inventory",
    "tests/spec/test_fuzz.py::test_deleted_and_duplicated_lines",
    "tests/spec/test_fuzz.py::test_mutated_reference_lines",
    "tests/targets/test_fake_target.py::test_the_fake_target_works_through_every_command",
)


def _group(item: pytest.Item) -> str | None:
    path = Path(str(item.path)).relative_to(ROOT).as_posix()
    for prefix, group in SHARED_GROUPS.items():
        if path.startswith(prefix):
            return group
    for name, group in SHARED_FIXTURES.items():
        if name in item.fixturenames:
            return group
    definitions = getattr(item, "_fixtureinfo", None)
    for defs in definitions.name2fixturedefs.values() if definitions is not None else ():
        if defs and defs[-1].scope == "module":  # built once per module: keep the module on one worker
            return path
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        group = _group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        test = item.nodeid.partition("[")[0]  # the test function, whatever its parameters
        if group in SLOW_GROUPS or SLOW_FIXTURES.intersection(item.fixturenames) or test.startswith(SLOW_TESTS):
            item.add_marker(pytest.mark.slow)
    # the slow ones first (a stable sort: same order on every worker), so that xdist hands out the long
    # groups at the start and the short tests fill in around them instead of trailing behind the last group
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
