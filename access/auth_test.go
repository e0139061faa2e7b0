package access

import (
	"net/http/httptest"
	"testing"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// openState is the state of a cluster with no auth at all and no member
// key yet (a fresh one, before its leader sets the key).
type openState struct{ State }

func (openState) AuthState() (bool, []byte, error) { return false, nil, nil }

// TestAuthenticate_NoAuthIsAnonymous: on a cluster without any auth,
// before it has a member key, a caller is admitted as a member (every
// request is trusted) and audited as "anonymous", on whose behalf its
// X-AX-Actor says, not as a node ("node:anonymous": the audit actor of a
// fresh cluster's first writes read like a node's).
func TestAuthenticate_NoAuthIsAnonymous(t *testing.T) {
	a, err := New(Config{NodeID: "n1"}, openState{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("PUT", "/v1/calendars/x", nil)
	r.Header.Set(client.HeaderActor, "root@vm")
	id, err := a.Authenticate(r)
	if err != nil {
		t.Fatal(err)
	}
	if id.Principal == nil || id.Principal.Name != "anonymous" || id.Principal.Role != model.RoleAdmin || !id.Member {
		t.Errorf("identity %+v (principal %+v), want the anonymous admin, a member", id, id.Principal)
	}
	// A member naming itself keeps its node name.
	r.Header.Set(client.HeaderActor, "node:n2")
	if id, _ := a.Authenticate(r); id.Principal == nil || id.Principal.Name != "anonymous" {
		t.Errorf("without auth, a caller's claim to be a node is not believed: %+v", id.Principal)
	}
}
