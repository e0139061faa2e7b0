package fsm

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

func hashOf(c byte) string { return strings.Repeat(string(c), 64) }

func TestFSM_ACLTokens(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	admin := TokenRecord{Name: "bootstrap", Role: model.RoleAdmin, Hash: hashOf('a')}
	steps := []struct {
		name     string
		typ      CommandType
		body     any
		wantCode string
	}{
		{"bootstrap", CmdACLBootstrap, ACLBootstrap{Token: admin}, ""},
		{"bootstrap twice", CmdACLBootstrap, ACLBootstrap{Token: TokenRecord{Name: "b2", Role: model.RoleAdmin, Hash: hashOf('b')}}, model.CodeConflict},
		{"reader", CmdACLPutToken, ACLPutToken{Token: TokenRecord{Name: "r", Role: model.RoleReader, Hash: hashOf('c')}, TTLms: 60_000}, ""},
		{"same name", CmdACLPutToken, ACLPutToken{Token: TokenRecord{Name: "r", Role: model.RoleReader, Hash: hashOf('d')}}, model.CodeConflict},
		{"same hash", CmdACLPutToken, ACLPutToken{Token: TokenRecord{Name: "r2", Role: model.RoleReader, Hash: hashOf('c')}}, model.CodeConflict},
		{"bad role", CmdACLPutToken, ACLPutToken{Token: TokenRecord{Name: "x", Role: "root", Hash: hashOf('e')}}, model.CodeInvalid},
		{"empty name", CmdACLPutToken, ACLPutToken{Token: TokenRecord{Role: model.RoleReader, Hash: hashOf('e')}}, model.CodeInvalid},
		{"bad hash", CmdACLPutToken, ACLPutToken{Token: TokenRecord{Name: "x", Role: model.RoleReader, Hash: "zz"}}, model.CodeInvalid},
		{"executor unbound", CmdACLPutToken, ACLPutToken{Token: TokenRecord{Name: "x", Role: model.RoleExecutor, Hash: hashOf('e')}}, model.CodeInvalid},
		{"executor", CmdACLPutToken, ACLPutToken{Token: TokenRecord{Name: "w1", Role: model.RoleExecutor, Executor: "w1",
			Labels: map[string]string{"pool": "gpu"}, Hash: hashOf('f')}}, ""},
		{"revoke the last admin", CmdACLDeleteToken, TaskRef{Name: "bootstrap"}, model.CodePrecondition},
		{"second admin", CmdACLPutToken, ACLPutToken{Token: TokenRecord{Name: "ops", Role: model.RoleAdmin, Hash: hashOf('1')}}, ""},
		{"revoke the first admin", CmdACLDeleteToken, TaskRef{Name: "bootstrap"}, ""},
		{"revoke unknown", CmdACLDeleteToken, TaskRef{Name: "nobody"}, model.CodeNotFound},
		{"undecodable", CmdACLPutToken, "not an object", model.CodeInvalid},
	}
	for i, s := range steps {
		res := a.apply(cmd(t, s.typ, "", t0+int64(i), s.body))
		got := ""
		if res.Err != nil {
			got = res.Err.Code
		}
		if got != s.wantCode {
			t.Fatalf("%s: got code %q (%v), want %q", s.name, got, res.Err, s.wantCode)
		}
	}
	if !f.ACLBootstrapped() {
		t.Error("not bootstrapped")
	}
	if _, ok, _ := f.TokenByHash(hashOf('a')); ok {
		t.Error("the revoked token still resolves")
	}
	r, ok, _ := f.TokenByHash(hashOf('c'))
	if !ok || r.Name != "r" || r.ExpiresAt != t0+2+60_000 || r.CreatedBy != "tester" {
		t.Errorf("reader token: got %+v, %v", r, ok)
	}
	if !r.Expired(t0+2+60_000) || r.Expired(t0+2+59_999) {
		t.Error("expiry is off")
	}
	ts, err := f.Tokens()
	if err != nil || len(ts) != 3 {
		t.Fatalf("tokens: got %v, %v; want r, w1, ops", ts, err)
	}
	for _, tk := range ts {
		if tk.Secret != "" {
			t.Errorf("token %s listed with a secret", tk.Name)
		}
	}
}

func TestFSM_MemberKeyFirstWins(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	if f.MemberKey() != nil {
		t.Fatal("a new state machine has a member key")
	}
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	for _, k := range [][]byte{k1, k2} {
		if res := a.apply(cmd(t, CmdSetMemberKey, "", t0, SetMemberKey{Key: k})); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if res := a.apply(cmd(t, CmdSetMemberKey, "", t0, SetMemberKey{Key: []byte{3}})); res.Err == nil || res.Err.Code != model.CodeInvalid {
		t.Errorf("a short key: got %v, want invalid_argument", res.Err)
	}
	if got := f.MemberKey(); !bytes.Equal(got, k1) {
		t.Errorf("member key: got %x, want the first one", got)
	}
}

func TestFSM_Secrets(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	put := func(name, value string) *Result {
		return a.apply(cmd(t, CmdPutSecret, "", t0, PutSecret{Name: name, Value: []byte(value)}))
	}
	if res := put("db", "v1"); res.Err != nil {
		t.Fatal(res.Err)
	}
	var s model.Secret
	if err := put("db", "v2").Decode(&s); err != nil || s.Version != 2 {
		t.Fatalf("second put: got %+v, %v; want version 2", s, err)
	}
	if rec, ok := f.Secret("db"); !ok || string(rec.Value) != "v2" {
		t.Errorf("stored value: got %+v", rec)
	}
	for _, tc := range []struct {
		name, secret string
		value        string
		want         string
	}{
		{"empty name", "", "x", model.CodeInvalid},
		{"bad name", "Bad Name", "x", model.CodeInvalid},
		{"too large", "big", strings.Repeat("x", maxStoredSecret+1), model.CodeTooLarge},
	} {
		if res := put(tc.secret, tc.value); res.Err == nil || res.Err.Code != tc.want {
			t.Errorf("%s: got %v, want %s", tc.name, res.Err, tc.want)
		}
	}
	list, err := f.Secrets()
	if err != nil || len(list) != 1 || list[0].Name != "db" || list[0].Version != 2 {
		t.Errorf("list: got %+v, %v", list, err)
	}
	if res := a.apply(cmd(t, CmdDeleteSecret, "", t0, TaskRef{Name: "db"})); res.Err != nil {
		t.Fatal(res.Err)
	}
	res := a.apply(cmd(t, CmdDeleteSecret, "", t0, TaskRef{Name: "db"}))
	if !errors.Is(res.Err, model.ErrNotFound) {
		t.Errorf("delete twice: got %v, want not_found", res.Err)
	}
}

// TestFSM_FailedRestoreIsUnreadable: after a restore that lost the old
// database, the auth state is an error (never "not bootstrapped"), reads
// fail, and a good restore brings everything back.
func TestFSM_FailedRestoreIsUnreadable(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	a.apply(cmd(t, CmdACLBootstrap, "", t0, ACLBootstrap{Token: TokenRecord{Name: "bootstrap", Role: model.RoleAdmin, Hash: hashOf('a')}}))
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var good memSink
	if err := snap.Persist(&good); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	a.apply(cmd(t, CmdPutTask, "", t0+1, PutTask{Task: cronTask("a", "@hourly")})) // the cached auth state is now stale

	if err := f.Restore(io.NopCloser(strings.NewReader("garbage"))); err == nil {
		t.Fatal("restoring garbage succeeded")
	}
	if f.Failed() == nil {
		t.Fatal("Failed() is nil after a failed restore")
	}
	if boot, _, err := f.AuthState(); !errors.Is(err, model.ErrUnavailable) {
		t.Errorf("auth state: bootstrapped %v, error %v; want unavailable", boot, err)
	}
	if !f.ACLBootstrapped() {
		t.Error("ACLBootstrapped is false on an unreadable state: it must fail closed")
	}
	if _, _, err := f.TokenByHash(hashOf('a')); err == nil {
		t.Error("TokenByHash answers on an unreadable state")
	}
	if _, err := f.Snapshot(); err == nil {
		t.Error("a snapshot of an unreadable state")
	}

	if err := f.Restore(io.NopCloser(&good)); err != nil {
		t.Fatal(err)
	}
	if boot, _, err := f.AuthState(); err != nil || !boot || f.Failed() != nil {
		t.Errorf("after a good restore: bootstrapped %v, %v, failed %v", boot, err, f.Failed())
	}
}
