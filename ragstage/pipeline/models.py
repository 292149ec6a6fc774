"""Which model a stage uses, where its weights come from, and whether it is a stand-in.

Every stage takes a model id *or* a local path; :class:`ModelRef` carries that choice
together with its provenance, so receipts and traces can say plainly when a run used an
offline stand-in instead of the hub model a chapter talks about.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

__all__ = ["ModelRef", "ModelSpec", "as_model_ref", "pick_device", "LOAD_ERRORS"]

#: What loading a missing, retired or unreachable model raises (transformers and
#: sentence-transformers raise OSError for missing files, ValueError for malformed ids).
LOAD_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError)


@dataclass(frozen=True)
class ModelRef:
    """A model to load: a hub id or a local folder, optionally one GGUF file inside it.

    ``stand_in_for`` names the hub model this one replaces when it is a stand-in (an offline
    copy or a different model); ``label`` is the short name printed in traces and receipts.
    """

    source: str
    gguf_file: str | None = None
    revision: str | None = None
    stand_in_for: str | None = None
    label: str | None = None

    @property
    def name(self) -> str:
        """The name shown in traces: the label, else the source (plus the GGUF file)."""
        if self.label:
            return self.label
        return f"{self.source}/{self.gguf_file}" if self.gguf_file else self.source

    @property
    def is_stand_in(self) -> bool:
        return self.stand_in_for is not None

    def describe(self) -> dict[str, Any]:
        """Provenance for receipts and cache keys (local paths are resolved)."""
        local = Path(self.source).expanduser()
        return {
            "name": self.name,
            "source": str(local.resolve()) if local.exists() else self.source,
            "local": local.exists(),
            "gguf_file": self.gguf_file,
            "revision": self.revision,
            "stand_in": self.is_stand_in,
            "stand_in_for": self.stand_in_for,
        }


ModelSpec = Union[str, "os.PathLike[str]", ModelRef]


def as_model_ref(model: ModelSpec) -> ModelRef:
    """Accept a hub id, a local path or a :class:`ModelRef`."""
    if isinstance(model, ModelRef):
        return model
    if isinstance(model, (str, os.PathLike)):
        return ModelRef(os.fspath(model))
    raise TypeError(f"expected a model id, a path or a ModelRef, got {type(model).__name__}")


def pick_device(device: str = "auto") -> str:
    """``"auto"`` picks cuda, then mps, then cpu; anything else is passed through."""
    if device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"
