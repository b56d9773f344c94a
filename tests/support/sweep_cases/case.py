"""One bad input of the sweep (tests/support/bad_input_sweep.py) and the errors that count as clear."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Case:
    channel: str
    name: str
    run: Callable[[], object]
    #: exception types that count as a clear refusal (API cases)
    expect: tuple[type[BaseException], ...] = (ValueError,)


class CliRefused(Exception):
    """A CLI run that ended with one `error:` line and a non-zero exit (the good outcome)."""


def run_cli(args: list[str], must_name: str = "", must_not_show: str = "", never_printed: tuple[str, ...] = ()) -> None:
    """`tacocat ARGS` in-process, classified for the sweep: `CliRefused` for one `error:` line
    (naming `must_name`, never showing `must_not_show`), RuntimeError for a traceback, for
    output that holds one of `never_printed` (a progress bar, say) or for any other refusal,
    and None when the command was accepted (counted as silent). Matches and tournaments run
    without progress bars."""
    from typer.testing import CliRunner

    from tacocat.cli.app import app

    if args and args[0] in ("match", "tournament"):
        args = [*args, "--no-progress"]
    result = CliRunner().invoke(app, args)
    if "Traceback" in result.output or (result.exception is not None and not isinstance(result.exception, SystemExit)):
        raise RuntimeError(f"traceback: {result.exception!r}")
    if result.exit_code == 0:
        return
    shown = [text for text in never_printed if text in result.output]
    if shown:
        raise RuntimeError(f"{shown[0]!r} printed with the error: {result.output!r}")
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    if len(errors) != 1:
        raise RuntimeError(f"not one error line: {result.output!r}")
    if must_name not in errors[0] or (must_not_show and must_not_show in errors[0]):
        raise RuntimeError(f"the error does not name {must_name!r} or shows a file's text: {errors[0]}")
    raise CliRefused(errors[0])
