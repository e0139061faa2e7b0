package api

import (
	"context"
	"net"
	"strconv"

	"ax/model"
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
