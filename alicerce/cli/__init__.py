"""The `alicerce` command line: one module per verb, registered here.

Command modules import their heavy dependencies inside the command body, and a plain
``alicerce validate`` is served before the CLI framework loads (see fastpath), from the result
cache when the spec is unchanged. Validation never imports Pulumi or Ansible.

Every mistake on the command line (an unknown option, a missing value) is reported like every
other user error: ``error: ...`` on stderr and exit code 2, never a boxed panel.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    import typer


def build_app() -> typer.Typer:
    import typer

    from alicerce.cli import apply, catalog, costs, diff, docs, generate, init, plan, preview, rules, schema, show, validate, versions
    from alicerce.cli.root import HELP, root

    app = typer.Typer(
        name="alicerce",
        help=HELP,
        no_args_is_help=True,
        add_completion=True,
        rich_markup_mode=None,  # plain help: it wraps to the terminal and reads the same in a pipe
        pretty_exceptions_enable=False,  # a bug prints Python's own traceback
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    app.callback()(root)
    for module in (validate, show, plan, preview, schema, docs, catalog, init, rules, generate, apply, diff, versions, costs):
        module.register(app)
    return app


def run(app: typer.Typer, args: Sequence[str]) -> int:
    """Run the application on ``args`` and return its exit code, reporting command-line mistakes plainly."""
    from typer import Abort
    from typer._click.exceptions import ClickException, NoArgsIsHelpError  # typer 0.27 vendors click

    try:
        result = app(args=list(args), prog_name="alicerce", standalone_mode=False)
    except NoArgsIsHelpError as exc:
        print(exc.format_message(), file=sys.stderr)
        return exc.exit_code
    except ClickException as exc:
        context = getattr(exc, "ctx", None)
        command = context.command_path if context is not None else "alicerce"
        from alicerce.cli.errors import terminal_text

        print(f"error: {terminal_text(exc.format_message())} (see `{command} --help`)", file=sys.stderr)
        return exc.exit_code
    except Abort:
        print("error: aborted", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader went away (`alicerce plan | head`): stop quietly, as a Unix tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return result if isinstance(result, int) else 0


def main() -> None:
    # pydantic looks for plugins in the entry points of every installed distribution the first time it
    # builds a validator (tens of milliseconds in a full environment); alicerce's own models use none
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from alicerce.cli.fastpath import serve

    code = serve(sys.argv[1:])
    if code is not None:
        _exit_now(code)
    sys.exit(run(build_app(), sys.argv[1:]))


def _exit_now(code: int) -> NoReturn:
    """End a plain `validate` without tearing the interpreter down. Everything it writes is written and closed by
    now (its output is flushed here; the result cache's entries are closed before their rename), and nothing it
    loads registers an exit handler, so what teardown would do is free the objects of ~180 modules one by one:
    ~10 ms of a cold run's ~130. A reader that closed the pipe early ends it with code 1, as the other commands do."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        code = code or 1
    os._exit(code)
