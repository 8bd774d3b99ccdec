"""`alicerce show`: the resolved spec of one environment (overrides applied, defaults filled)."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated

import typer

from alicerce.cli.common import DEFAULT_SPEC, EnvOption, SpecArg, load
from alicerce.cli.errors import user_errors


class Format(str, Enum):
    yaml = "yaml"
    json = "json"


def register(app: typer.Typer) -> None:
    app.command("show")(show)


@user_errors(json_flag="output_format")
def show(
    env: EnvOption,
    spec: SpecArg = DEFAULT_SPEC,
    output_format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.yaml,
) -> None:
    """Print one environment's resolved platform: what every emitter will build from."""
    import yaml

    from alicerce.rules.validate import validated

    data = validated(load(spec), env).to_data()
    if output_format is Format.json:
        print(json.dumps(data, indent=2))
    else:
        print(yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True), end="")
