"""The one kind of refusal of the web app: `WebError`, an HTTP status and one line
(`tacocat.game.errors.one_line`), and `check_text`, which refuses text no answer could carry."""

from __future__ import annotations

import json
from typing import Any

from tacocat.game.errors import one_line


class WebError(Exception):
    """A refused request: an HTTP status and a one-line message; nothing was changed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = one_line(message)


def check_text(data: Any, where: str) -> None:
    """WebError 400 unless every string in `data` (JSON) is valid Unicode: JSON's `\\ud800`
    escapes make lone surrogates, which no answer could carry."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise WebError(400, f"{where} holds text that is not valid Unicode (a lone surrogate)") from None
