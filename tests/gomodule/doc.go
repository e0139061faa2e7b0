// Package gomodule tests ax as Go users get it: a consumer module that
// requires github.com/ax-scheduler/ax and builds the documentation's Go
// SDK snippets, and `go install github.com/ax-scheduler/ax/cmd/ax@VERSION`
// from a module proxy serving the checkout. They run the go command, so
// they take a minute; -short skips them.
package gomodule
