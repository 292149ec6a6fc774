"""The pieces every chapter's exercises are made of, and the one check that reads them.

An :class:`Exercise` holds what the reader is asked to pass to the self-check (``submit``),
the solution code (run in the chapter's namespace, it leaves its answer in ``result``), and
the :class:`Expect` items the answer must meet. Each :class:`Expect` pairs an expected value
with a hint that says where to look when the value is wrong: the hint is all a reader ever
sees of it, so a self-check never gives the answer away.

A check reads intent in three steps, each silencing the next: a result of the wrong kind (a
string where a number was asked, a dict where a table was) gets the slip named
(:mod:`._kinds`); an edit the exercise asks for that is not in the result gets a hint at the
edit (``Expect(edit=True)``), since hints about consequences assume it was made; only then
are the consequences compared, each with its hint, or with a hint for a recognised wrong
value (``Expect.why``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Callable, Mapping

from ._kinds import type_problem

__all__ = ["Expect", "Exercise", "CheckResult", "evaluate", "explained"]

_MISSING = object()


@dataclass(frozen=True)
class Expect:
    """One thing an exercise's result must show.

    ``what`` names the quantity: an attribute of the result (``"stage"``), a key of a mapping
    result (``"fixed"``), or ``"value"`` for the result itself. ``get`` reads it instead when
    the quantity needs a computation (a table's cell, a count). Floats are compared within
    half a unit of the last of ``places`` decimals, the precision the exercise states: a value
    rounded to it is right, and so is the unrounded one.

    ``edit`` marks a check of the edit itself (d2 is in the prompt, the label has no span):
    when one fails, only the edit's hints are shown. ``why`` names a recognised wrong value
    (``by=None`` pooling the groups): it returns a hint for it, or None for the general hint.
    """

    what: str
    value: Any
    hint: str
    get: Callable[[Any], Any] | None = None
    places: int = 3
    edit: bool = False
    why: Callable[[Any], str | None] | None = None

    def read(self, result: Any) -> Any:
        """The quantity from the reader's result (``_MISSING`` when it is not there)."""
        if self.get is not None:
            return self.get(result)
        if self.what == "value":
            return result
        if isinstance(result, Mapping):
            return result.get(self.what, _MISSING)
        return getattr(result, self.what, _MISSING)

    def matches(self, got: Any) -> bool:
        """Whether ``got`` equals the expected value (enums by value, floats rounded)."""
        return _same(_plain(got), _plain(self.value), self.places)


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "shape", None) == ():
        return value.item()  # a numpy scalar
    return value


def _same(got: Any, want: Any, places: int) -> bool:
    if isinstance(want, float) or isinstance(got, float):
        if got is None or want is None or isinstance(got, bool) or isinstance(want, bool):
            return got is want
        try:
            return abs(float(got) - float(want)) <= 0.5 * 10 ** -places + 1e-12  # equal as printed
        except (TypeError, ValueError):
            return False
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(_same(g, w, places) for g, w in zip(got, want))
    return bool(got == want)


@dataclass(frozen=True)
class Exercise:
    """One exercise of one chapter.

    ``id`` is ``"<chapter>.<n>"`` (``"2.7"``; ``"6b.1"`` in a chapter between two others).
    ``submit`` says in a few words what the reader passes to ``check`` (shown when the result
    has the wrong shape). ``solution`` is Python run in the chapter's namespace after the
    chapter's own cells; it binds ``result``, the thing passed
    to ``check``. It must not change what later exercises start from (edit copies with
    ``Trace.replace``, reset a widget it edits). ``output_varies`` marks a solution whose
    printed output depends on the machine's caches (a run that reports what it computed):
    its cell in the solutions notebook is tagged for nbval to skip the output, while the
    self-check it ends with is still asserted by the tests. ``kind`` is the kind of result
    asked for (one of :data:`._kinds.KINDS`, or empty): a result of another kind gets its slip
    named before anything else. ``why`` is the solution's value and the reasoning behind it,
    in two or three sentences: the solutions notebook shows it under the solution.
    """

    id: str
    title: str
    submit: str
    solution: str
    expects: tuple[Expect, ...]
    output_varies: bool = False
    kind: str = ""
    why: str = ""

    @property
    def chapter(self) -> int | str:
        """The chapter's number, or its number and letter (``"6b"``) for a chapter between two others."""
        head = self.id.split(".")[0]
        return int(head) if head.isdigit() else head


@dataclass(frozen=True)
class CheckResult:
    """What a self-check found: ``ok``, and for each wrong item, where to look."""

    exercise: str
    ok: bool
    problems: tuple[str, ...] = field(default=())

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if self.ok:
            return f"Exercise {self.exercise}: right."
        lines = [f"Exercise {self.exercise}: not yet."]
        lines += [f"  - {problem}" for problem in self.problems]
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # IPython shows str, not the dataclass
        printer.text(str(self))

    def __repr__(self) -> str:
        return str(self)


def evaluate(exercise: Exercise, result: Any) -> CheckResult:
    """Compare ``result`` with every expectation of ``exercise``; hints only, never values."""
    if result is None:
        return CheckResult(exercise.id, False, (f"your result is None: pass {exercise.submit}",))
    slip = type_problem(exercise.kind, result)
    if slip:
        return CheckResult(exercise.id, False, (slip,))
    edits = [e for e in exercise.expects if e.edit]
    problems = _problems(edits, result, exercise.submit) or _problems(
        [e for e in exercise.expects if not e.edit], result, exercise.submit)
    return CheckResult(exercise.id, not problems, tuple(problems))


def _problems(expects: list[Expect], result: Any, submit: str) -> list[str]:
    """A line per expectation ``result`` does not meet: the reader's value and where to look."""
    problems = []
    for expect in expects:
        try:
            got = expect.read(result)
        except Exception as error:  # a result of the wrong shape: say what to pass instead
            problems.append(f"could not read {expect.what} from your result "
                            f"({type(error).__name__}: {error}); pass {submit}")
            continue
        if got is _MISSING:
            problems.append(f"your result ({type(result).__name__}) has no {expect.what}; pass {submit}")
            continue
        try:
            if getattr(got, "shape", ()) != () and not isinstance(expect.value, (list, tuple)):
                raise TypeError("an array where one value was wanted")
            same = expect.matches(got)
        except (TypeError, ValueError):  # e.g. a table's column where one value was wanted
            problems.append(f"{expect.what} of your result is a {type(got).__name__}, not one value; "
                            f"pass {submit}")
            continue
        if not same:
            hint = (expect.why(got) if expect.why is not None else None) or expect.hint
            problems.append(f"{expect.what} is {_show(got, expect.places)}: {hint}")
    return problems


def _show(value: Any, places: int = 3) -> str:
    """The reader's own value: three decimals, or as many as the exercise's precision when three
    would hide a difference at that precision (0.0004 is not shown as 0.000)."""
    value = _plain(value)
    if isinstance(value, float):
        digits = 3 if round(value, 3) == round(value, max(3, places)) else max(3, places)
        shown = f"{value:.{digits}f}"
        return shown if value == 0 or float(shown) != 0 else f"{value:.3g}"
    return repr(value)


def explained(declared: tuple[Exercise, ...], why: Mapping[str, str]) -> tuple[Exercise, ...]:
    """The exercises with their ``why`` (value and reasoning) from ``why``, one for every exercise."""
    ids = [ex.id for ex in declared]
    if sorted(ids) != sorted(why):
        raise ValueError(f"why is given for {sorted(why)}, the exercises are {ids}")
    return tuple(replace(ex, why=why[ex.id]) for ex in declared)
