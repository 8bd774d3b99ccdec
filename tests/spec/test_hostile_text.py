"""A hostile corpus (issue 22): the reference spec with hostile text in every text field.

Each case puts one payload (quotes, line breaks, ``$(..)``, backticks, ``;``, Jinja, ``${{ }}``, escape
codes, NUL, HTML, ``..`` paths, a long string, look-alike letters, bidi controls, a private key, a
kubeconfig, AWS keys) into one field of ``platform.yaml`` and validates it in-process. Expected: located
errors (file:line:col, never a traceback, never the raw escape code or the secret echoed), except in the
few prose fields, where the text is legitimately accepted and must then stay inert in every generated file.
A handful of cases go through the real CLI in a subprocess.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from alicerce.emit.tree import render_tree
from alicerce.rules.validate import check, validated
from alicerce.spec.errors import SpecError, SpecInvalid
from alicerce.spec.loader import load_text
from alicerce.spec.text import INVISIBLE, secret_shape
from tests.conftest import ROOT

PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)
KUBECONFIG = (
    "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n"
    "  user: {client-key-data: TFMwdExTMUNSVWRKVGlCU1UwRWdVRkpKVmtGVVJTQkxSVmt0TFMwdExRbz0=}\n"
)
SECRET_BODIES = ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmU", "TFMwdExTMUNSVWRK", "IOSFODNN7EXAMPLE", "bPxRfiCYEXAMPLEKEY")

PAYLOADS: dict[str, str] = {
    "quote-semicolon": 'x"; touch /tmp/pwned; echo "',
    "newline": "o2ib1 10.0.0.1@o2ib\ninstall lnet /bin/sh -c id",
    "tab": "a\tb",
    "command-substitution": "$(id)",
    "backticks": "`id`",
    "semicolon": "a;reboot",
    "jinja-expression": "{{ lookup('pipe', 'id') }}",
    "jinja-statement": "{% for x in range(99999999) %}{% endfor %}",
    "actions-expression": "${{ secrets.AWS_SECRET_ACCESS_KEY }}",
    "escape-codes": "\x1b]0;owned\x07\x1b[2J\x1b[31mred",
    "nul": "a\x00b",
    "html": "<script>alert(1)</script><img src=x onerror=alert(1)>",
    "dot-dot": "/scratch/../etc",
    "relative-climb": "../../etc/passwd",
    "long": "a" * 5000,
    "look-alike": "dеmо",  # Cyrillic е and о
    "bidi": "txt\u202eexe.sh",
    "zero-width": "ai\u200b",
    "pem": PEM,
    "kubeconfig": KUBECONFIG,
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "aws-secret-key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
}

# prose for people: text there is accepted (escaped where it is shown), so these cases must stay inert
PROSE = {("metadata", "owner"), ("waivers", 0, "justification"), ("tenancy", "teams", 0, "groups", 0)}


def _base() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "platform.yaml").read_text("utf-8"))
    lustre = next(t for t in data["storage"] if t["name"] == "dc1-lustre")
    lustre["onprem"]["mountOptions"] = ["flock"]  # the fields of issue 22's defect 1, present to be attacked
    lustre["onprem"]["lnetRoutes"] = ["o2ib1 10.40.0.250@o2ib"]
    return data


BASE = _base()


def _leaves(data: Any, parts: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if isinstance(data, str):
        yield parts
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, (*parts, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _leaves(value, (*parts, index))


def _find(predicate: Any) -> tuple[str | int, ...]:
    return next(p for p in _leaves(BASE) if predicate(p))


def _distinct(paths: Iterator[tuple[str | int, ...]]) -> list[tuple[str | int, ...]]:
    """The first text value of each field (storage[].name once, not once per tier): one per spec position."""
    seen: dict[tuple[str, ...], tuple[str | int, ...]] = {}
    for path in paths:
        seen.setdefault(tuple("[]" if isinstance(p, int) else p for p in path), path)
    return list(seen.values())


LEAVES = _distinct(p for p in _leaves(BASE) if p[:1] not in (("apiVersion",), ("kind",)))
_STORAGE = [t["name"] for t in BASE["storage"]]
CRITICAL = [
    ("storage", _STORAGE.index("dc1-lustre"), "onprem", "lnetRoutes", 0),
    ("storage", _STORAGE.index("dc1-lustre"), "onprem", "mountOptions", 0),
    ("storage", _STORAGE.index("dc1-lustre"), "onprem", "server"),
    ("storage", _STORAGE.index("home"), "onprem", "export"),
    ("storage", _STORAGE.index("dc1-lustre"), "mountPath"),
    _find(lambda p: p[-1] == "kubeconfigSecret"),
]


def _cases() -> list[tuple[tuple[str | int, ...], str]]:
    names = sorted(PAYLOADS)
    cases = [(path, name) for path in CRITICAL for name in names]
    # every other text field of the reference spec gets one payload, chosen in turn
    cases += [(path, names[index % len(names)]) for index, path in enumerate(p for p in LEAVES if p not in CRITICAL)]
    return cases


CASES = _cases()


def _set(data: dict[str, Any], path: tuple[str | int, ...], value: str) -> dict[str, Any]:
    out = copy.deepcopy(data)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def _text(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10_000)


def _errors(text: str) -> list[SpecError]:
    try:
        return check(load_text(text, "platform.yaml")).errors
    except SpecInvalid as invalid:  # the loader's own refusals (control characters, long values, ...)
        return invalid.errors


def _assert_reported_safely(errors: list[SpecError], payload: str) -> None:
    for error in errors:
        assert error.span.file == "platform.yaml" and error.span.line >= 1 and error.span.column >= 1, error
        rendered = error.render()
        assert not INVISIBLE.search(rendered), f"raw control character in {rendered!r}"
        reported = rendered + json.dumps(error.to_json())
        for body in SECRET_BODIES:
            assert body not in reported, f"secret echoed: {reported[:200]}"


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 100
    assert len({path for path, _ in CASES}) >= 50


@pytest.mark.parametrize(("path", "payload"), CASES, ids=[f"{'.'.join(map(str, p))}={n}" for p, n in CASES])
def test_hostile_text_is_refused_with_a_located_error_or_is_prose(path: tuple[str | int, ...], payload: str) -> None:
    value = PAYLOADS[payload]
    errors = _errors(_text(_set(BASE, path, value)))
    _assert_reported_safely(errors, value)
    if not errors:
        assert path in PROSE, f"{'.'.join(map(str, path))} accepted {payload!r}: only prose fields may hold such text"
        assert secret_shape(value) is None and not INVISIBLE.search(value.replace("\n", "").replace("\t", ""))


# what generate must never produce from spec text: a raw control character, HTML, an unescaped template
NEVER_IN_FILES = ("\x00", "\x1b", "<script", "<img")


def _vars_loader() -> type[yaml.SafeLoader]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))  # type: ignore[arg-type]
    return Loader


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_prose_that_is_accepted_stays_inert_in_every_generated_file(payload: str) -> None:
    value = PAYLOADS[payload]
    data = BASE
    for path in PROSE:
        data = _set(data, path, value)
    try:
        document = load_text(_text(data), "platform.yaml")
    except SpecInvalid:
        return  # refused by the loader (located): the test above checks how
    if check(document).errors:
        return  # refused (located): the test above checks how
    files = render_tree(validated(document, "prod"))
    loader = _vars_loader()
    for name, text in files.items():
        for bad in NEVER_IN_FILES:
            assert bad not in text, f"{name} holds {bad!r}"
        if name.endswith((".yml", ".yaml")):
            list(yaml.load_all(text, Loader=loader))  # still parses: the text did not break out of its value
        if name.endswith(".json"):
            json.loads(text)
    group_vars = [yaml.load(t, Loader=loader) for n, t in files.items() if n.startswith("ansible/group_vars/")]
    from alicerce.spec.text import LNET_ROUTE, config_word

    for section in group_vars:
        for mount in (section or {}).get("parallel_fs_client_mounts", []):
            for field in (mount["source"], mount["path"], *mount["options"]):
                config_word(field, "fstab field")  # one field of its fstab line, as the role's filter requires
        for route in (section or {}).get("parallel_fs_client_lnet_routes", []):
            assert LNET_ROUTE.problem(route) is None


CLI_CASES = [
    (("storage", _STORAGE.index("dc1-lustre"), "onprem", "lnetRoutes", 0), "newline", "U+000A LINE FEED"),
    (_find(lambda p: p[-1] == "kubeconfigSecret"), "pem", "looks like a PEM block"),
    (("tenancy", "teams", 0, "name"), "escape-codes", "U+001B ESCAPE"),
    (("storage", _STORAGE.index("dc1-lustre"), "mountPath"), "dot-dot", '"." or ".." segment'),
]


@pytest.mark.parametrize(("path", "payload", "says"), CLI_CASES, ids=[n for _, n, _ in CLI_CASES])
def test_the_cli_exits_2_with_a_located_message_and_no_traceback(
    path: tuple[str | int, ...], payload: str, says: str, tmp_path: Path
) -> None:
    spec = tmp_path / "platform.yaml"
    spec.write_text(_text(_set(BASE, path, PAYLOADS[payload])), "utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "alicerce", "validate", str(spec)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 2, out
    assert "Traceback" not in out
    assert says in out
    assert f"{spec}:" in out or "platform.yaml:" in out
    assert not INVISIBLE.search(out.replace("\n", "")), repr(out)
    for body in SECRET_BODIES:
        assert body not in out


def test_user_text_in_platform_md_is_inert_markdown_and_mermaid() -> None:
    from alicerce.emit.gitops.report import md, mermaid

    assert md("<script>x</script> a|b \x00") == "&lt;script&gt;x&lt;/script&gt; a\\|b \\\\x00"
    assert mermaid('a"] --> evil["<b>') == "a#quot;] --#gt; evil[#quot;#lt;b#gt;"
