# The two commands of the README. Both create .venv (if missing).
#   make lab   - install what chapters 1-7 need (.[lab]) and open chapter 1 in JupyterLab
#   make test  - install everything (.[all]: the export tools, test tools, Spark too), then run
#                every test and re-execute every notebook: pytest --nbval
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
# The CPU build of torch on this project's machines; pip takes a local wheel when one exists.
TORCH  ?= torch==2.13.0

.PHONY: install install-lab lab test book

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-lab: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet "$(TORCH)" -e ".[lab]"
	touch $@

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet "$(TORCH)" -e ".[all]"
	touch $@ $(VENV)/.installed-lab

install: $(VENV)/.installed

install-lab: $(VENV)/.installed-lab

# The repository is the server's root, so the file browser reaches fixtures/ too. As root
# (a container), JupyterLab refuses to start without --allow-root.
lab: install-lab
	$(BIN)/jupyter lab --ServerApp.root_dir=. $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/01_five_cases.ipynb

# --nbval-current-env: notebooks run in this environment's kernel; chapter 5's run cell
# generates for about 20 minutes on two CPU cores the first time, past nbval's default timeout.
test: install
	$(BIN)/python -m pytest --nbval --nbval-current-env --nbval-cell-timeout=3600 tests notebooks

# The website: the manual in docs/ (docs/index.md is its start page), the committed notebooks
# (not re-executed) and the glossary, into build/book/html (see book/build.py).
book: install
	$(BIN)/python book/build.py
