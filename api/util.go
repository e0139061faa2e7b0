package api

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ax-scheduler/ax/model"
)

type contextT = context.Context

func validHostPort(field, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return model.FieldErrorf(field, "%q is not host:port", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return model.FieldErrorf(field, "%q has a bad port", addr)
	}
	return nil
}

// writeTarget validates the path value key (a task name, or an instance id
// when key is "id") and the caller headers of a write.
func writeTarget(w http.ResponseWriter, r *http.Request, key string) (string, Caller, bool) {
	var v string
	var err error
	if key == "id" {
		v = r.PathValue("id")
		_, err = model.ParseID(v)
	} else {
		v, err = pathName(r, key)
	}
	if err != nil {
		writeError(w, err)
		return "", Caller{}, false
	}
	c, err := caller(r)
	if err != nil {
		writeError(w, err)
		return "", Caller{}, false
	}
	return v, c, true
}

// parseLimit reads ?limit= (1 to 1000; 0 when absent).
func parseLimit(q url.Values) (int, error) { return intParam(q, "limit", 0, 1, 1000) }
