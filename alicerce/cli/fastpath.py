"""`alicerce validate` without the CLI framework: the command line most often typed, served first.

A plain ``validate [SPEC] [--env ENV | --all-envs] [--format text|json|sarif]`` is parsed here and
answered from the result cache, or checked and remembered. Anything else (help, unknown options,
conflicting options, other commands) goes to the typer application, which explains mistakes.
"""

from __future__ import annotations

import gc
import sys

from alicerce.cli.result_cache import Request, Result, lookup, store
from alicerce.spec.source import MAX_BYTES, SourceTooLarge, UnreadableSource, read_regular_file

EXIT_INVALID = 2


def parse_validate(argv: list[str]) -> Request | None:
    """The request of a plain `validate` command line, or None for anything else."""
    if not argv or argv[0] != "validate":
        return None
    spec: str | None = None
    env: str | None = None
    all_envs = False
    output_format = "text"
    args = iter(argv[1:])
    for arg in args:
        name, _, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in ("--env", "-e"):
            env = inline or next(args, None)
            if not env:
                return None
        elif name in ("--format", "-f"):
            output_format = inline or next(args, "")
            if output_format not in ("text", "json", "sarif"):
                return None
        elif arg == "--all-envs":
            all_envs = True
        elif arg == "--":  # the rest is the spec's path, even one that starts with "-" (how generated CI writes it)
            rest = list(args)
            if spec is not None or len(rest) != 1:
                return None
            spec = rest[0]
        elif arg.startswith("-") or spec is not None:
            return None
        else:
            spec = arg
    if env is not None and all_envs:
        return None
    return Request(spec or "platform.yaml", env, output_format)


def run_validate(request: Request) -> Result:
    """The outcome of a validate request: replayed when the spec is unchanged, else checked."""
    try:
        spec_bytes: bytes | None = read_regular_file(request.spec, MAX_BYTES)
    except (UnreadableSource, SourceTooLarge):
        spec_bytes = None  # the check reports it, located
    if spec_bytes is not None:
        cached = lookup(request, spec_bytes)
        if cached is not None:
            return cached
    result = _check_lite(request) or _check(request)
    if spec_bytes is not None:
        store(request, spec_bytes, result)
    return result


def _check_lite(request: Request) -> Result | None:
    """The outcome of a valid spec, checked without pydantic (alicerce.spec.lite); None when the lite check
    cannot vouch for it (an error, or input it does not interpret): the real check then runs and reports."""
    import os

    if os.environ.get("ALICERCE_LITE") == "0":
        return None
    from alicerce.spec.lite import GiveUp, installed

    try:
        with installed():
            result = _check(request)
    except GiveUp:
        return None
    except Exception:  # whatever went wrong, the real check runs and says it
        return None
    return result if result.code == 0 else None


def _check(request: Request) -> Result:
    import json

    from alicerce.rules.validate import alias_notes, check
    from alicerce.spec.errors import SpecError, SpecInvalid, render_report
    from alicerce.spec.loader import load_file

    as_json = request.output_format == "json"
    environments: list[str] = []
    notes: list[SpecError] = []
    warnings: list[SpecError] = []
    try:
        checked = check(load_file(request.spec, request.spec), None if request.env is None else [request.env])
        errors, environments, warnings = checked.errors, list(checked.environments), checked.warnings
        # a warning rule's findings (Rule.warning) beside the notes: both are shown with a valid spec only, after the
        # errors are fixed, so the errors stay the first thing read
        notes = [] if errors else alias_notes(checked) + checked.warnings
    except SpecInvalid as exc:
        errors = exc.errors
    if request.output_format == "sarif":
        from importlib.metadata import version

        from alicerce.rules.sarif import render_sarif

        # code scanning lists results by level, so a warning is a result beside the errors rather than held back
        return Result(render_sarif(errors, version("alicerce"), warnings), "", EXIT_INVALID if errors else 0)
    if errors:
        out, err = render_report(errors, as_json)
        return Result(out, err, EXIT_INVALID)
    if as_json:
        document: dict[str, object] = {"schemaVersion": 1, "valid": True, "environments": environments, "errors": []}
        if notes:  # only where there are some: the document of a spec without them stays as it was
            document["notes"] = [note.to_json() for note in notes]
        return Result(json.dumps(document, indent=2) + "\n", "", 0)
    lines = "".join((note.render_warning() if note.rule else note.render_note()) + "\n" for note in notes)
    return Result("", f"{lines}{request.spec}: valid (environments: {', '.join(environments)})\n", 0)


def serve(argv: list[str]) -> int | None:
    """Answer a plain validate command line; None when it is not one."""
    request = parse_validate(argv)
    if request is None:
        return None
    # this process checks one spec (its size is capped by the loader) and exits: the cyclic garbage collector would
    # only walk the many objects that importing the models creates, again and again (2-3 ms of a cold run)
    collecting = gc.isenabled()
    gc.disable()
    try:
        result = run_validate(request)
    finally:
        if collecting:  # a caller in the same process (the tests) gets its collector back
            gc.enable()
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.code
