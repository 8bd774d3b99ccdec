"""A record behaves as the dataclass of the same declaration: each test builds both and compares them."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import field
from functools import cached_property
from typing import Any

import pytest

from alicerce.spec.record import field as record_field
from alicerce.spec.record import record, replace


@record
class RecordPoint:
    x: int
    y: int = 0
    tags: list[str] = record_field(default_factory=list)
    note: str = record_field(default="", compare=False, repr=False)


@record
class DeclaredWithDataclassesField:  # dataclasses.field works on a record too
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    note: str = field(default="", compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class DataPoint:  # the same declaration as a dataclass
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    note: str = field(default="", compare=False, repr=False)


BOTH = pytest.mark.parametrize(
    "cls", [RecordPoint, DeclaredWithDataclassesField, DataPoint], ids=["record", "record-dataclasses-field", "dataclass"]
)


@record
class Pair:
    left: str
    right: float = 1.0


@record(frozen=False)
class Box:
    items: list[int] = field(default_factory=list)


@record(kw_only=True)
class Named:
    name: str
    size: int = 1

    def __post_init__(self) -> None:
        if self.size < 0:
            raise ValueError("size")

    @cached_property
    def label(self) -> str:
        return f"{self.name}:{self.size}"


@record(kw_only=True)
class Child(Named):
    extra: tuple[str, ...] = ()


def test_construction_defaults_and_factories_match_the_dataclass() -> None:
    for cls in (RecordPoint, DeclaredWithDataclassesField, DataPoint):
        a, b = cls(1), cls(1)
        assert (a.x, a.y, a.tags, a.note) == (1, 0, [], "")
        assert a.tags is not b.tags  # a fresh default per instance
        assert cls(1, 2, ["t"], "n") == cls(x=1, y=2, tags=["t"], note="other")  # note is not compared
    assert repr(RecordPoint(1, 2)) == "RecordPoint(x=1, y=2, tags=[])" and repr(DataPoint(1, 2)) == "DataPoint(x=1, y=2, tags=[])"


@BOTH
def test_equality_and_hash(cls: Any) -> None:
    a, b = cls(1, 2, ("t",)), cls(1, 2, ("t",))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != cls(1, 3) and a != (1, 2, ("t",))


def test_identical_values_compare_as_tuples_do() -> None:
    nan = float("nan")
    assert (RecordPoint(nan) == RecordPoint(nan)) is (DataPoint(nan) == DataPoint(nan))
    assert (RecordPoint(nan, 0, []) == RecordPoint(nan, 0, [])) is (DataPoint(nan, 0, []) == DataPoint(nan, 0, []))
    assert RecordPoint(1) != DataPoint(1)  # another class is never equal


@BOTH
def test_frozen(cls: Any) -> None:
    point = cls(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        del point.x
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.other = 1


@BOTH
def test_the_dataclass_functions(cls: Any) -> None:
    point = cls(1, 2, ["t"], "n")
    assert [f.name for f in dataclasses.fields(point)] == ["x", "y", "tags", "note"]
    assert dataclasses.is_dataclass(point)
    assert dataclasses.asdict(point) == {"x": 1, "y": 2, "tags": ["t"], "note": "n"}
    assert dataclasses.astuple(point) == (1, 2, ["t"], "n")
    moved = dataclasses.replace(point, y=5)
    assert (moved.x, moved.y, moved.note) == (1, 5, "n") and type(moved) is cls
    if cls is not DataPoint:
        assert replace(point, y=5) == moved and replace(point, y=5).note == "n"
    assert cls.__match_args__ == ("x", "y", "tags", "note")


@BOTH
def test_pickle_and_copy(cls: Any) -> None:
    point = cls(1, 2, ["t"], "n")
    for other in (pickle.loads(pickle.dumps(point)), copy.copy(point), copy.deepcopy(point)):
        assert other == point and other.note == "n"


@BOTH
def test_wrong_calls_are_type_errors(cls: Any) -> None:
    with pytest.raises(TypeError):
        cls()
    with pytest.raises(TypeError):
        cls(1, 2, [], "n", "too many")
    with pytest.raises(TypeError):
        cls(1, x=1)
    with pytest.raises(TypeError):
        cls(1, z=1)


def test_keyword_only_post_init_cached_property_and_subclass() -> None:
    with pytest.raises(TypeError):
        Named("n")  # type: ignore[misc]
    with pytest.raises(ValueError, match="size"):
        Named(name="n", size=-1)
    named = Named(name="n", size=2)
    assert named.label == "n:2" and named.label is named.label
    child = Child(name="c", extra=("x",))
    assert (child.name, child.size, child.extra) == ("c", 1, ("x",))
    assert child != Named(name="c") and repr(child) == "Child(name='c', size=1, extra=('x',))"
    assert hash(child) == hash(Child(name="c", extra=("x",)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        child.name = "d"  # type: ignore[misc]


def test_mutable_records_have_no_hash_and_take_assignment() -> None:
    box = Box()
    box.items = [1]
    assert box == Box([1]) and Box.__hash__ is None
    assert Pair("a") == Pair("a", 1.0) and hash(Pair("a")) == hash(Pair("a", 1.0))


def test_methods_a_class_defines_itself_are_kept() -> None:
    @record
    class Loose:
        value: int

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 7

        def __repr__(self) -> str:
            return "loose"

    assert Loose(1) == Loose(2) and hash(Loose(1)) == 7 and repr(Loose(1)) == "loose"


def test_refusals_at_declaration() -> None:
    with pytest.raises(TypeError, match="non-default argument"):

        @record
        class Bad:
            a: int = 0
            b: int  # type: ignore[misc]

    with pytest.raises(ValueError, match="mutable default"):

        @record
        class Shared:
            items: list[int] = []  # noqa: RUF012

    with pytest.raises(TypeError, match="slots"):

        @record
        class Slotted:
            __slots__ = ("a",)
            a: int


@record(order=True)
class Version:
    major: int
    minor: int = 0


@dataclasses.dataclass(frozen=True, order=True)
class DataVersion:
    major: int
    minor: int = 0


def test_ordering_matches_the_dataclass() -> None:
    pairs = [((1, 2), (1, 3)), ((2, 0), (1, 9)), ((1, 1), (1, 1))]
    for a, b in pairs:
        for op in ("__lt__", "__le__", "__gt__", "__ge__"):
            assert getattr(Version(*a), op)(Version(*b)) == getattr(DataVersion(*a), op)(DataVersion(*b)), (a, b, op)
    assert sorted([Version(2), Version(1, 5), Version(1)]) == [Version(1), Version(1, 5), Version(2)]
    with pytest.raises(TypeError):
        assert Version(1) < DataVersion(2)  # type: ignore[operator]


def test_a_record_loads_no_dataclasses_until_asked() -> None:
    """The point of a record: declaring and using one imports neither dataclasses nor inspect."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from alicerce.spec.record import record, field\n"
        "@record\nclass A:\n    x: int\n    y: tuple = field(default_factory=tuple)\n"
        "a = A(1); assert a == A(1) and hash(a) == hash(A(1)) and repr(a) == 'A(x=1, y=())'\n"
        "print(sorted({'dataclasses', 'inspect'} & set(sys.modules)))\n"
        "import dataclasses; print(dataclasses.is_dataclass(a), [f.name for f in dataclasses.fields(a)])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "True ['x', 'y']"]
