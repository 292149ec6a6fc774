"""The error every trace reader raises for bad input: it names the file, the position and the field."""

from __future__ import annotations

from typing import Any

__all__ = ["TraceError"]


class TraceError(ValueError):
    """Bad trace input. The message names the file, the position and the field.

    ``unit`` names the position: ``"line"`` in a JSON Lines file, ``"row"`` in a Parquet file.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None, unit: str = "line") -> None:
        self.path, self.line, self.field, self.detail, self.unit = path, line, field, message, unit
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"{unit} {line}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # an error raised in a worker process reaches the caller whole (path, line, field, unit)
        return _rebuild_error, (type(self), self.detail, self.path, self.line, self.field, self.unit)


def _rebuild_error(cls: type[TraceError], detail: str, path: str | None, line: int | None, field: str | None,
                   unit: str) -> TraceError:
    return cls(detail, path=path, line=line, field=field, unit=unit)
