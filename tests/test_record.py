"""`@record` (checker/base/record.py) against the frozen slots dataclass it stands for:
each record class here has a `@dataclass(frozen=True, slots=True)` twin, and what a
program can observe of an instance (equality, hash, repr, fields, replace, frozenness,
copy and pickle, pattern matching) must be the same for both."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from checker.base.record import record


@record
class Ours:
    name: str
    kids: tuple = ()
    span: int = field(default=0, compare=False)
    tags: list = field(default_factory=list, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Theirs:
    name: str
    kids: tuple = ()
    span: int = field(default=0, compare=False)
    tags: list = field(default_factory=list, repr=False, compare=False)


@pytest.mark.parametrize("args", [("a",), ("a", (1, 2)), ("a", (1,), 7), ("b", (), 3, ["x"])])
def test_a_record_is_observed_as_its_dataclass_twin(args):
    o, t = Ours(*args), Theirs(*args)
    assert repr(o).removeprefix("Ours") == repr(t).removeprefix("Theirs") and hash(o) == hash(t)
    assert o == Ours(*args) and (o == Ours("z")) == (t == Theirs("z"))
    assert o == dataclasses.replace(o, span=99)  # a field(compare=False) takes no part
    assert [f.name for f in dataclasses.fields(o)] == [f.name for f in dataclasses.fields(t)]
    assert dataclasses.astuple(o) == dataclasses.astuple(t) and dataclasses.is_dataclass(o)
    assert Ours.__match_args__ == Theirs.__match_args__ and Ours.__slots__ == Theirs.__slots__
    assert pickle.loads(pickle.dumps(o)) == o and copy.deepcopy(o) == o and copy.copy(o) == o
    assert o.__eq__(t) is NotImplemented  # another class is never equal, as for dataclasses
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.name = "c"
    with pytest.raises(dataclasses.FrozenInstanceError):
        del o.name
    with pytest.raises(AttributeError):
        o.not_a_field = 1  # slots: no instance dictionary
    match o:
        case Ours(name, kids):  # __match_args__
            assert (name, kids) == (args[0], o.kids)


def test_defaults_factories_inheritance_and_identity_equality():
    assert Ours("a").tags is not Ours("a").tags  # a factory runs per instance
    with pytest.raises(TypeError):
        Ours()  # a field without a default is required

    @record
    class Child(Ours):  # type: ignore[misc, valid-type]
        extra: int = 5

    c = Child("a")
    assert repr(c) == "test_defaults_factories_inheritance_and_identity_equality.<locals>.Child(name='a', " \
                      "kids=(), span=0, extra=5)"
    assert c == Child("a", (), 4) and c != Child("a", extra=6) and hash(c) == hash(("a", (), 5))
    assert c != Ours("a")  # another class

    @record(eq=False)
    class Plain:
        x: int

    p = Plain(1)
    assert p != Plain(1) and p == p and hash(p) == object.__hash__(p)
    assert repr(p).endswith("Plain(x=1)")


def test_a_class_keeps_its_own_eq_and_repr():
    @record
    class Own:
        x: int

        def __eq__(self, other: object) -> bool:
            return True

        def __repr__(self) -> str:
            return "own"

    assert Own(1) == Own(2) and repr(Own(1)) == "own"
    assert hash(Own(1)) == hash((1,))  # a frozen dataclass hashes its fields even so
