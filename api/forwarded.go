package api

import (
	"context"
	"net/http"
)

// HeaderForwarded marks a request one node forwarded to another; the
// receiver must answer it itself rather than forward it again.
const HeaderForwarded = "X-AX-Forwarded"

type forwardedKey struct{}

// IsForwarded reports whether the request behind ctx was forwarded by
// another node.
func IsForwarded(ctx context.Context) bool {
	v, _ := ctx.Value(forwardedKey{}).(bool)
	return v
}

func markForwarded(r *http.Request) *http.Request {
	if r.Header.Get(HeaderForwarded) == "" {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), forwardedKey{}, true))
}
