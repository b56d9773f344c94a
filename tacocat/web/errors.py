"""The one kind of refusal of the web app: `WebError`, an HTTP status and one line, and the
helpers that make such lines."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError


class WebError(Exception):
    """A refused request: an HTTP status and a one-line message; nothing was changed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = one_line(message)


def one_line(err: BaseException | str) -> str:
    """An error on one line (a pydantic report as its first problem, with the field), as
    UTF-8 text (a lone surrogate a client sent becomes "?")."""
    if isinstance(err, ValidationError):
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        text = f"{where}: {message}" if where else message
    else:
        text = " ".join(str(err).split()) or type(err).__name__
    return text.encode("utf-8", "replace").decode("utf-8")


def check_text(data: Any, where: str) -> None:
    """WebError 400 unless every string in `data` (JSON) is valid Unicode: JSON's `\\ud800`
    escapes make lone surrogates, which no answer could carry."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise WebError(400, f"{where} holds text that is not valid Unicode (a lone surrogate)") from None
