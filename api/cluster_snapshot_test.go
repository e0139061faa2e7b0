package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
)

// TestServer_Snapshot: GET /v1/snapshot streams the node's state with
// its applied index before the body and its SHA-256 as a trailer; a
// failure before the first byte is an error answer.
func TestServer_Snapshot(t *testing.T) {
	rec := serve(t, api.Config{}, &fakeBackend{}, getReq("/v1/snapshot"))
	sum := sha256.Sum256([]byte("state"))
	res := rec.Result()
	if rec.Code != 200 || rec.Body.String() != "state" || res.Header.Get(api.HeaderSnapshotIndex) != "42" ||
		res.Trailer.Get(api.HeaderSnapshotSHA256) != hex.EncodeToString(sum[:]) {
		t.Fatalf("got %d %q index %q trailer %v", rec.Code, rec.Body.String(), res.Header.Get(api.HeaderSnapshotIndex), res.Trailer)
	}
	rec = serve(t, api.Config{}, &fakeBackend{Err: model.Errorf(model.CodeUnavailable, "state machine unavailable")}, getReq("/v1/snapshot"))
	if e := errorOf(t, rec); rec.Code != 503 || e.Code != model.CodeUnavailable {
		t.Errorf("a failing snapshot: %d %+v", rec.Code, e)
	}
}
