// Package redact masks secret values in text and in streams, the way
// GitHub Actions masks its secrets: each value of at least MinLen bytes,
// each of its lines, and its JSON-, URL- and Go-quoted forms become Mask.
// The action package masks an attempt's output and error with it; the
// worker masks what it reports.
package redact
