package api

import (
	"net/http"

	"github.com/ax-scheduler/ax/model"
)

func (s aclRoutes) aclBootstrap(w http.ResponseWriter, r *http.Request) {
	c, err := caller(r)
	if err != nil {
		writeError(w, err)
		return
	}
	reply(w)(s.b.acl.ACLBootstrap(r.Context(), c))
}

func (s aclRoutes) listTokens(w http.ResponseWriter, r *http.Request) {
	if !s.barrier(w, r) {
		return
	}
	reply(w)(s.b.acl.ListTokens(r.Context()))
}

func (s aclRoutes) createToken(w http.ResponseWriter, r *http.Request) {
	c, err := caller(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var req model.ACLTokenRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := req.Validate(); err != nil {
		writeError(w, err)
		return
	}
	reply(w)(s.b.acl.CreateToken(r.Context(), c, req))
}

func (s aclRoutes) revokeToken(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	reply(w)(s.b.acl.RevokeToken(r.Context(), c, name))
}
