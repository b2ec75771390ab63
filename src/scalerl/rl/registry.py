"""Name -> implementation tables, so a recipe picks components by name and never by if-chain.

One :class:`Registry` per kind of component (policy losses, loss aggregations, advantage
normalisations, length-control modes). Built-ins register themselves with the decorator at
import; a user adds their own the same way:

    from scalerl.rl.losses import register_policy_loss

    @register_policy_loss("my_loss")
    def my_loss(inputs, cfg): ...

This module imports nothing heavy, so config validation can name the known entries.
"""

from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

from scalerl.errors import ConfigError

F = TypeVar("F")


class Registry(Generic[F]):
    """A named table of implementations of one kind (``kind`` appears in error messages)."""

    def __init__(self, kind: str, how_to_add: str = "") -> None:
        self.kind = kind
        self.how_to_add = how_to_add
        self._items: dict[str, F] = {}

    def register(self, name: str, *, replace: bool = False) -> Callable[[F], F]:
        """Decorator adding ``fn`` under ``name``; re-registering a name needs ``replace=True``."""

        def add(fn: F) -> F:
            if name in self._items and not replace:
                raise ValueError(f"a {self.kind} named {name!r} is already registered; pass replace=True")
            self._items[name] = fn
            return fn

        return add

    def get(self, name: str) -> F:
        try:
            return self._items[name]
        except KeyError:
            hint = f" ({self.how_to_add})" if self.how_to_add else ""
            raise ConfigError(
                f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}{hint}"
            ) from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
