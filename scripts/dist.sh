#!/bin/sh
# dist.sh builds versioned static ax binaries into dist/ with SHA-256
# checksums. VERSION defaults to `git describe --tags --always --dirty`;
# PLATFORMS to "linux/amd64 linux/arm64". Cross-compiling needs no
# network once the module cache holds the dependencies.
#
#   make dist                       # or: scripts/dist.sh
#   VERSION=v1.2.3 make dist
set -eu

cd "$(dirname "$0")/.."
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
PLATFORMS=${PLATFORMS:-"linux/amd64 linux/arm64"}
OUT=${OUT:-dist}

mkdir -p "$OUT"
for p in $PLATFORMS; do
	os=${p%/*}
	arch=${p#*/}
	bin="$OUT/ax_${VERSION}_${os}_${arch}"
	echo "building $bin"
	# The same build line as the Dockerfile's (deploy/deploy_test.go checks it).
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o "$bin" ./cmd/ax
done
(cd "$OUT" && sha256sum ax_"${VERSION}"_* > "ax_${VERSION}_SHA256SUMS")
echo "wrote $OUT/ax_${VERSION}_SHA256SUMS"
