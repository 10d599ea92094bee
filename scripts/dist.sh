#!/usr/bin/env bash
# `make dist`: a versioned release tarball, DIST/ncclbpf-VERSION-OS-ARCH.tar.gz
# (DIST defaults to build/dist), holding
#   bin/ncclbpf              the CLI
#   lib/libncclbpf.so        the plugin (tuner, profiler and net), production build
#   include/                 the headers policies are written against
#   policies/                the example policies: C sources, objects, rules file
#   docs/                    the operator's guide, environment, metrics, error codes,
#                            the Grafana dashboard (what README.md links to)
#   README.md, RATIONALE.md, BENCHMARKS.md
#   SHA256SUMS               checksums of every other file, for sha256sum -c
# and a .sha256 of the tarball beside it. VERSION defaults to `git describe`,
# REVISION to the commit; both are stamped into the CLI (--version). The
# binaries are stripped; the library exports NCCL's plugin symbols only
# (plugin/exports.map). CLI=PATH and LIB=PATH package binaries built
# beforehand instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DIST=${DIST:-${BUILD:-build}/dist}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo unknown)}
case $VERSION in '' | *[!A-Za-z0-9._+-]*)
	echo "dist: VERSION=$VERSION: use letters, digits and . _ + -" >&2
	exit 1
	;;
esac
REVISION=${REVISION:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
case $REVISION in '' | *[!A-Za-z0-9._+-]*)
	echo "dist: REVISION=$REVISION: use letters, digits and . _ + -" >&2
	exit 1
	;;
esac
NAME=ncclbpf-$VERSION-$($GO env GOOS)-$($GO env GOARCH)
STAGE=$DIST/$NAME
rm -rf "$STAGE" "$DIST/$NAME.tar.gz" "$DIST/$NAME.tar.gz.sha256"
mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/include"
if [ -n "${CLI:-}" ]; then cp "$CLI" "$STAGE/bin/ncclbpf"; else
	STRIP=1 GO=$GO VERSION=$VERSION REVISION=$REVISION scripts/build.sh cli "$STAGE/bin/ncclbpf"
fi
if [ -n "${LIB:-}" ]; then cp "$LIB" "$STAGE/lib/libncclbpf.so"; else
	STRIP=1 GO=$GO scripts/build.sh lib "$STAGE/lib/libncclbpf.so"
fi
cp include/*.h "$STAGE/include/"
# The example policies as the repository has them: sources, headers, objects, READMEs, rules.
git ls-files policies | grep -E '\.(c|h|o|conf|md)$' | while read -r f; do
	mkdir -p "$STAGE/$(dirname "$f")"
	cp "$f" "$STAGE/$f"
done
# The documentation README.md links to (docs/, with the error-code
# reference), and the other top-level documents.
git ls-files docs | while read -r f; do
	mkdir -p "$STAGE/$(dirname "$f")"
	cp "$f" "$STAGE/$f"
done
cp README.md RATIONALE.md BENCHMARKS.md "$STAGE/"
(cd "$STAGE" && find . -type f ! -name SHA256SUMS | LC_ALL=C sort | sed 's|^\./||' | xargs sha256sum >SHA256SUMS)
tar -C "$DIST" --sort=name --owner=0 --group=0 --numeric-owner --mtime='@0' -czf "$DIST/$NAME.tar.gz" "$NAME"
(cd "$DIST" && sha256sum "$NAME.tar.gz" >"$NAME.tar.gz.sha256")
echo "$DIST/$NAME.tar.gz"
