"""Keyword arguments renamed in the public Python API, accepted under their old name for one
release with a `DeprecationWarning`."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def renamed_keyword(old: str, new: str) -> Callable[[F], F]:
    """Let the decorated function take `old=` as a deprecated alias of its keyword `new`."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(f"{func.__name__}() got both {new}= and its deprecated alias {old}=")
                warnings.warn(f"{func.__name__}({old}=...) is deprecated; use {new}=", DeprecationWarning,
                              stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
