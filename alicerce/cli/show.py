"""`alicerce show`: the resolved spec of one environment (overrides applied, defaults filled)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from alicerce.cli.common import DEFAULT_SPEC, EnvOption, SpecArg, choose_environment, load
from alicerce.cli.errors import user_errors
from alicerce.cli.output import print_json

EPILOG = """\b
Examples:
  alicerce show --env prod                   the resolved prod environment, sizes as 200GiB, 30d
  alicerce show --env prod --format json     the same in base units (bytes, bytes/s, seconds) for scripts
"""


class ShowFormat(str, Enum):
    text = "text"
    yaml = "yaml"
    json = "json"


def register(app: typer.Typer) -> None:
    app.command("show", epilog=EPILOG)(show)


@user_errors()
def show(
    env: EnvOption = None,
    spec: SpecArg = DEFAULT_SPEC,
    output_format: Annotated[
        ShowFormat, typer.Option("--format", "-f", help="text (YAML with units such as 200GiB; yaml is the same) or json (base units).")
    ] = ShowFormat.text,
) -> None:
    """Print one environment's resolved platform: what every emitter will build from.

    Overrides applied, versions and defaults filled, facts decided (GPU model, EFA interfaces,
    FSx size, hosts, tags). Entries of the spec's own catalog are marked userCatalog.
    """
    import yaml

    from alicerce.rules.validate import validated

    document = load(spec)
    platform = validated(document, choose_environment(document, env))
    if output_format is ShowFormat.json:
        print_json({"schemaVersion": 1, **platform.to_data()})
    else:
        text = yaml.safe_dump(platform.to_data(human=True), sort_keys=False, default_flow_style=False, allow_unicode=True)
        print(text, end="")
