#!/bin/sh
# The style checks CI runs (scripts/test.sh), on the C++ lines changed since BASE
# (default: the last commit, i.e. what HEAD changed; uncommitted changes count too):
#   clang-format (.clang-format): changed lines must be formatted;
#   clang-tidy (.clang-tidy): no finding on a changed line (needs build/compile_commands.json).
#   check-style.sh [BASE]        e.g. scripts/check-style.sh origin/main
#   check-style.sh --fix [BASE]  reformat the changed lines in place instead of checking
# Only changed lines, so that touching an old file does not oblige reformatting all of it.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fix=""
if [ "${1:-}" = --fix ]; then fix=1; shift; fi
base=${1:-HEAD~1}
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  echo "check-style: no commit $base to compare with; nothing checked"
  exit 0
fi
for tool in clang-format-diff-14 clang-tidy-diff-14.py; do
  command -v "$tool" >/dev/null || { echo "check-style: $tool missing (scripts/install-deps.sh test installs it)" >&2; exit 1; }
done
diff_of_changes() { git diff -U0 --no-color "$base" -- 'src/*.cpp' 'src/*.hpp' 'tests/*.cpp' 'tests/*.hpp'; }

if [ -n "$fix" ]; then
  diff_of_changes | clang-format-diff-14 -p1 -i
  exit 0
fi

status=0
format=$(diff_of_changes | clang-format-diff-14 -p1)
if [ -n "$format" ]; then
  echo "$format"
  echo "check-style: changed lines are not formatted; run scripts/check-style.sh --fix $base" >&2
  status=1
fi

if [ ! -f build/compile_commands.json ]; then
  echo "check-style: build/compile_commands.json missing (scripts/build.sh all); clang-tidy skipped" >&2
  exit 1
fi
# clang-tidy-diff reports findings on the changed lines of the sources it is given.
tidy=$(diff_of_changes | clang-tidy-diff-14.py -p1 -path build -quiet -j "$(nproc)" 2>&1) || status=1
if printf '%s\n' "$tidy" | grep -q ' error: '; then
  printf '%s\n' "$tidy" | grep -A3 ' error: ' >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "check-style: changed lines since $base pass clang-format and clang-tidy"
exit "$status"
