# Two commands do everything on a fresh clone: `make run` and `make test`.
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
PYTHON ?= python3

.PHONY: run test index check bench messages clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	$(BIN)/python -m pip check
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

## Serve the manual on KB_HOST:KB_PORT (default 127.0.0.1:8000) with SQLite and a local index.
run: $(STAMP)
	$(BIN)/kb serve

## Set up, lint and format-check the code (ruff), check the content against the pinned verl release, build the index,
## run every test.
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/kb check
	$(BIN)/kb index
	$(BIN)/python -m pytest -q

index: $(STAMP)
	$(BIN)/kb index

check: $(STAMP)
	$(BIN)/kb check

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

## After changing a UI string: extract them all, merge them into each catalog (translate what is new), compile.
messages: $(STAMP)
	$(BIN)/pybabel extract -F babel.cfg --sort-output --omit-header -o app/locale/messages.pot .
	$(BIN)/pybabel update -i app/locale/messages.pot -d app/locale --no-fuzzy-matching
	$(BIN)/pybabel compile -d app/locale --statistics

clean:
	rm -rf $(VENV) data test-artifacts
