#!/usr/bin/env bash
# After `make test`: when the bpf_conformance corpus is absent (it lives
# outside the repository, see internal/corpus), the tests that run it were
# skipped; go test shows no skip of a passing package, so this prints one
# line per skipped test, from a run of just those tests. With the corpus
# present it prints nothing.
#   scripts/corpus-skips.sh --list   the tests it would run, "./PKG TestName" per line
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
dir=${NCCLBPF_CONFORMANCE_DIR:-../shared/conformance/bpf_conformance}
if [ "${1:-}" != --list ] && compgen -G "$dir/*.data" >/dev/null; then
	exit 0
fi
# The tests that call corpus.Dir, by package: "pkg TestName" lines.
files=$(git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go' -not -path './build/*' | sed 's|^\./||')
tests=$(echo "$files" | xargs awk '
	/^func Test[A-Za-z0-9_]*\(/ { name = $2; sub(/\(.*/, "", name) }
	/corpus\.Dir\(/ && name != "" { d = FILENAME; sub(/\/[^\/]*$/, "", d); print "./" d, name }' | sort -u)
if [ -z "$tests" ]; then
	echo "corpus-skips: no test calls corpus.Dir" >&2
	exit 1
fi
if [ "${1:-}" = --list ]; then
	echo "$tests"
	exit 0
fi
echo "bpf_conformance corpus not found at $dir (set NCCLBPF_CONFORMANCE_DIR): these tests were skipped:"
for pkg in $(echo "$tests" | awk '{print $1}' | sort -u); do
	names=$(echo "$tests" | awk -v p="$pkg" '$1 == p {print $2}' | paste -sd'|')
	out=$("$GO" test -count=1 -v -run "^($names)\$" "$pkg" 2>&1) || { echo "$out" >&2; exit 1; }
	# Capture first, then filter: no pipe that could end the test run early.
	printf '%s\n' "$out" | sed -n 's/^.*\(SKIP (no bpf_conformance corpus) .*\)$/  \1/p'
done
