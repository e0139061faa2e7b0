package api

import (
	"net/http"

	"github.com/ax-scheduler/ax/model"
)

func (s aclRoutes) putSecret(w http.ResponseWriter, r *http.Request) {
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
	reply(w)(s.b.secrets.PutSecret(r.Context(), c, name, req.Value))
}

func (s aclRoutes) listSecrets(w http.ResponseWriter, r *http.Request) {
	if !s.barrier(w, r) {
		return
	}
	reply(w)(s.b.secrets.ListSecrets(r.Context()))
}

func (s aclRoutes) deleteSecret(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	reply(w)(s.b.secrets.DeleteSecret(r.Context(), c, name))
}
