.PHONY: build test bench
build:
	go build -o ax ./cmd/ax

test:
	go test ./...

bench:
	go run ./cmd/ax bench tasks -clients 1,8,64 -n 2000
