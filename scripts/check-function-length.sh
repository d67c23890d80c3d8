#!/usr/bin/env bash
# check-function-length.sh — fails when a function in src/ or tools/ is longer
# than LIMIT lines (default 120), lambdas inside it included: a function that
# long does several things, and each deserves a name (ctest runs it as the
# test `function_length`).
#
# Usage: scripts/check-function-length.sh [REPO_ROOT] [LIMIT]
#
# Function extents come from universal-ctags (Debian `universal-ctags`,
# installed by scripts/setup-deps.sh), which reads C++ definitions with
# their end lines.
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
limit="${2:-120}"
ctags_bin="$(command -v ctags-universal || command -v ctags || true)"
if [[ -z "$ctags_bin" ]] || ! "$ctags_bin" --version 2>/dev/null | grep -q "Universal Ctags"; then
  echo "check-function-length.sh: universal-ctags is needed (scripts/setup-deps.sh installs it)" >&2
  exit 2
fi
cd "$root"
long="$("$ctags_bin" -R --languages=C++ --kinds-C++=f --fields=+ne -x --_xformat='%{end} %{line} %F %N' src tools |
  awk -v limit="$limit" '$1 != "" && $1 - $2 + 1 > limit { printf "%s:%s %s: %d lines\n", $3, $2, $4, $1 - $2 + 1 }' |
  sort)"
if [[ -n "$long" ]]; then
  echo "functions longer than $limit lines (split them along their steps):"
  echo "$long"
  exit 1
fi
echo "function length: every function in src/ and tools/ is at most $limit lines"
