#!/usr/bin/env bash
# The test command: install what the tests need, then lint, type-check and test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .

echo "== mypy --strict"
# The repository root is the package openrl_inspect (see pyproject.toml); mypy finds it
# through a symlink, as it cannot follow the editable install's import hook.
typecheck=$(mktemp -d)
trap 'rm -rf "$typecheck"' EXIT
ln -s "$PWD" "$typecheck/openrl_inspect"
(cd "$typecheck" && "$OLDPWD/.venv/bin/mypy" --config-file "$OLDPWD/pyproject.toml" -p openrl_inspect)
# The tests and benchmarks too, each folder as its own root (they import `support`).
# Named file by file: the configuration's `exclude` skips these folders when walking.
mapfile -t checked < <(find "$PWD/tests" "$PWD/bench" -name '*.py' -not -path '*/.*')
(cd "$typecheck" && MYPYPATH="$typecheck:$OLDPWD/tests:$OLDPWD/bench" \
    "$OLDPWD/.venv/bin/mypy" --config-file "$OLDPWD/pyproject.toml" --explicit-package-bases \
    "${checked[@]}")

echo "== import-linter"
.venv/bin/lint-imports

echo "== pytest"
cd tests && ../.venv/bin/python -m pytest "$@"
