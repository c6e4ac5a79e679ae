"""`@record`: a frozen slots dataclass (`@dataclass(frozen=True, slots=True)`) that is
cheaper to define.

Start-up (issue 30) is mostly the definition of the AST, model and IR classes: for each,
`dataclasses` writes and compiles six methods (`__init__`, `__repr__`, `__eq__`,
`__hash__`, `__setattr__`, `__delattr__`), and the compiling is about half of what a
small `check` costs. Only `__init__` needs code of its own per class; the other five are
the same for every record, reading the class's field names, and are shared here. The
class is still a dataclass (`dataclasses.fields`, `replace` and `is_dataclass` work as
before: `dataclasses` itself builds the fields and the slots), instances compare, hash
and print as a frozen dataclass's do (the same tuples, so the same hashes), and
assigning to a field raises `dataclasses.FrozenInstanceError`. mypy reads the decorator
as a frozen dataclass (`dataclass_transform`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: object) -> Callable[[Any], Any]:
        return lambda f: f

T = TypeVar("T", bound=type)


def _key(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """The tuple a frozen dataclass's `__eq__` and `__hash__` build, from C (attrgetter)."""
    if len(names) >= 2:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda self: (one(self),)
    return lambda self: ()


def _eq(self: Any, other: Any) -> object:
    if other.__class__ is self.__class__:
        key = self.__record_compare__
        return bool(key(self) == key(other))
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__record_compare__(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record_repr__)
    return f"{self.__class__.__qualname__}({shown})"


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: object, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(self: Any) -> list[object]:  # (copy and pickle: slots and no __setattr__)
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[object]) -> None:
    for f, value in zip(dataclasses.fields(self), state):
        object.__setattr__(self, f.name, value)


_NO_ARGUMENT = object()  # a default_factory's parameter default: the factory runs


def _init(cls: type) -> Callable[..., None]:
    """`__init__` as a frozen dataclass's: each field set with object.__setattr__."""
    params, body = [], []
    env: dict[str, Any] = {"_set": object.__setattr__, "_NO_ARGUMENT": _NO_ARGUMENT}
    for f in dataclasses.fields(cls):
        if not f.init:
            raise TypeError(f"{cls.__name__}.{f.name}: a record's fields are all set by __init__")
        value = f.name
        if f.default is not dataclasses.MISSING:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_NO_ARGUMENT")
            value = f"_factory_{f.name}() if {f.name} is _NO_ARGUMENT else {f.name}"
        else:
            params.append(f.name)
        body.append(f"    _set(self, {f.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, env)  # (the text is built from field names only)
    init: Callable[..., None] = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _build(cls: T, eq: bool) -> T:
    own = dict(cls.__dict__)
    if own.get("__doc__") is None:
        cls.__doc__ = cls.__name__  # (dataclasses would build it from inspect.signature)
    made: Any = dataclasses.dataclass(init=False, repr=False, eq=False, frozen=False, slots=True)(cls)
    fields = dataclasses.fields(made)
    shared: dict[str, object] = {
        "__init__": _init(made), "__record_repr__": tuple(f.name for f in fields if f.repr),
        "__setattr__": _frozen_setattr, "__delattr__": _frozen_delattr,
        "__getstate__": _getstate, "__setstate__": _setstate,
    }
    if "__repr__" not in own:
        shared["__repr__"] = _repr
    if eq:
        compared = tuple(f.name for f in fields if f.compare)
        hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        if compared != hashed:
            raise TypeError(f"{cls.__name__}: a record hashes the fields it compares")
        shared["__record_compare__"] = staticmethod(_key(compared))
        if "__eq__" not in own:
            shared["__eq__"] = _eq
        explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
        if not explicit_hash:
            shared["__hash__"] = _hash
    for name, value in shared.items():
        setattr(made, name, value)
    return cast(T, made)


@overload
def record(cls: T, /) -> T: ...
@overload
def record(*, eq: bool = True) -> Callable[[T], T]: ...


@dataclass_transform(frozen_default=True, eq_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: T | None = None, /, *, eq: bool = True) -> T | Callable[[T], T]:
    """`@record` / `@record(eq=False)` (identity equality and hash, as `eq=False`)."""
    if cls is None:
        return lambda c: _build(c, eq)
    return _build(cls, eq)
