"""Errors that reach the user, each mapped to a documented exit code."""

from __future__ import annotations

from typing import IO, Any

import click

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_NO_BUNDLE = 3
EXIT_INTERNAL = 4
#: the analysis ran, but some input given could not be read (each one is named)
EXIT_UNREAD_INPUT = 5


class HptriageError(click.ClickException):
    """Base class: one clear line on stderr and an exit code."""

    exit_code = EXIT_INTERNAL

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"hptriage: error: {self.format_message()}", err=True)


class UsageProblem(HptriageError):
    exit_code = EXIT_USAGE


class NoUsableBundle(HptriageError):
    """Nothing in the input was a readable bundle."""

    exit_code = EXIT_NO_BUNDLE


def no_usable_bundle(unread: list[tuple[str, str]]) -> NoUsableBundle:
    """The error for inputs none of which is a readable bundle, naming the first few and why."""
    detail = "; ".join(f"{path}: {why}" for path, why in unread[:3])
    more = f"; and {len(unread) - 3} more" if len(unread) > 3 else ""
    return NoUsableBundle(
        "no usable bundle in the input"
        + (f" ({detail}{more})" if detail else "")
        + ". A bundle is a directory or .tar.gz with meta.env (see docs/bundle-format.md)."
    )


class InternalError(HptriageError):
    exit_code = EXIT_INTERNAL
