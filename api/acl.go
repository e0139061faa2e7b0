package api

import (
	"net/http"

	"github.com/ax-scheduler/ax/model"
)

func (s *Server) aclBootstrap(w http.ResponseWriter, r *http.Request) {
	c, err := caller(r)
	if err != nil {
		writeError(w, err)
		return
	}
	reply(w)(s.b.ACLBootstrap(r.Context(), c))
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	if !s.barrier(w, r) {
		return
	}
	reply(w)(s.b.ListTokens(r.Context()))
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
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
	reply(w)(s.b.CreateToken(r.Context(), c, req))
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	reply(w)(s.b.RevokeToken(r.Context(), c, name))
}

func (s *Server) putSecret(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	var req model.SecretRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if len(req.Value) > model.MaxSecretSize {
		writeError(w, &model.Error{Code: model.CodeTooLarge, Field: "value", Message: "a secret is at most 64 KiB"})
		return
	}
	if req.Value == "" {
		writeError(w, model.FieldErrorf("value", "required"))
		return
	}
	reply(w)(s.b.PutSecret(r.Context(), c, name, req.Value))
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) {
	if !s.barrier(w, r) {
		return
	}
	reply(w)(s.b.ListSecrets(r.Context()))
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	reply(w)(s.b.DeleteSecret(r.Context(), c, name))
}

func (s *Server) executors(w http.ResponseWriter, r *http.Request) {
	reply(w)(s.b.Executors(r.Context()))
}
