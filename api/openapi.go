package api

import (
	_ "embed"
	"net/http"
)

// openAPIDoc is the OpenAPI 3.1 description of the public routes (the
// node-to-node ones are Internal's). TestOpenAPI_Routes keeps it in step
// with routes().
//
//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the OpenAPI 3.1 document served at GET /v1/openapi.json.
func OpenAPI() []byte { return append([]byte(nil), openAPIDoc...) }

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	writeBody(w, http.StatusOK, openAPIDoc)
}
