package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
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

// TestServer_Restore: POST /v1/snapshot hands the body, of any size (past
// the API's body limit), and the SHA-256 header to the backend and
// answers what the restored state holds; a malformed SHA-256 is refused
// naming the header, before the backend.
func TestServer_Restore(t *testing.T) {
	state := strings.Repeat("s", 2<<20)
	sum := strings.Repeat("ab", 32)
	fb := &fakeBackend{}
	rec := serve(t, api.Config{MaxBody: 1 << 20}, fb, request{method: "POST", path: "/v1/snapshot", body: state,
		header: map[string]string{api.HeaderSnapshotSHA256: sum}})
	var info member.StateInfo
	decodeBody(t, rec, &info)
	calls := fb.Calls()
	if rec.Code != 200 || info.Index != 42 || info.Size != int64(len(state)) || len(calls) != 1 || calls[0].Name != state+" "+sum {
		t.Fatalf("got %d %+v, calls %d", rec.Code, info, len(calls))
	}
	for _, bad := range []string{"ABAB", strings.Repeat("AB", 32), strings.Repeat("zz", 32)} {
		fb := &fakeBackend{}
		rec := serve(t, api.Config{}, fb, request{method: "POST", path: "/v1/snapshot", body: "x",
			header: map[string]string{api.HeaderSnapshotSHA256: bad}})
		if e := errorOf(t, rec); rec.Code != 400 || e.Field != api.HeaderSnapshotSHA256 || len(fb.Calls()) != 0 {
			t.Errorf("sha256 %q: %d %+v, %d calls", bad, rec.Code, e, len(fb.Calls()))
		}
	}
}
