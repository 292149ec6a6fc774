# The two commands of the README. Both create .venv (if missing) and install everything.
#   make lab   - open the workbook (chapter 1) in JupyterLab
#   make test  - run every test and re-execute every notebook: pytest --nbval
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
# The CPU build of torch on this project's machines; pip takes a local wheel when one exists.
TORCH  ?= torch==2.13.0

.PHONY: install lab test book

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[all]"
	touch $@

install: $(VENV)/.installed

# The repository is the server's root, so the file browser reaches fixtures/ too. As root
# (a container), JupyterLab refuses to start without --allow-root.
lab: install
	$(BIN)/jupyter lab --ServerApp.root_dir=. $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/01_five_cases.ipynb

# --nbval-current-env: notebooks run in this environment's kernel; chapter 5's run cell
# generates for about 20 minutes on two CPU cores the first time, past nbval's default timeout.
test: install
	$(BIN)/python -m pytest --nbval --nbval-current-env --nbval-cell-timeout=3600 tests notebooks

# The website: the committed notebooks (not re-executed), the glossary and the README's
# practitioner sections, into build/book/html (see book/build.py).
book: install
	$(BIN)/python book/build.py
