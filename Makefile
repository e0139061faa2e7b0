.PHONY: build test bench dist
build:
	go build -o ax ./cmd/ax

test:
	go test ./...

bench:
	go run ./cmd/ax-bench tasks -clients 1,8,64 -n 2000

# Static linux/amd64 and linux/arm64 binaries with checksums in dist/
# (VERSION=... to override git describe).
dist:
	scripts/dist.sh
