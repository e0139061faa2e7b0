package access

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// Revocation is immediate: once DELETE /v1/acl/tokens/NAME has returned,
// no node accepts the token. Two mechanisms make it so, one for members
// that answer and one for those that do not:
//
//   - The revoke waits until every member of the Raft configuration says
//     it has applied the revoke (GET /v1/internal/applied), each in
//     parallel: a few milliseconds on a healthy cluster.
//   - A node accepts ACL tokens only while its ACL state is fresh: it has
//     finished a read barrier (the leader's commit index, applied here)
//     that began less than aclFreshFor ago. A member that did not
//     confirm (down, partitioned, slow) is waited for at most aclFreshFor
//     plus revokeMargin after the revoke committed: by then any barrier
//     that keeps it fresh began after the commit, so its state holds the
//     revoke, or it refuses ACL tokens (503) until it has caught up.
//
// A node refreshes its freshness in the background while requests come
// (when less than half of it is left), so requests wait for a barrier
// only after a quiet spell. The management token, the legacy executor
// token, node certificates and member keys are not ACL tokens and do not
// depend on it.
//
// A write a node forwards carries the token's hash in the principal; the
// receiving node (the leader) checks it against its own state, so a write
// authenticated just before a revoke but arriving after it is refused.
const (
	aclFreshFor  = time.Second
	revokeMargin = 250 * time.Millisecond
)

// aclLease is until when this node's ACL state counts as fresh (see
// above); guarded by Access.catchMu.
type aclLease struct {
	until time.Time
}

// ensureACLFresh makes sure this node's ACL state is fresh, catching up
// with the leader if it is not, and reports whether it caught up. It
// fails when the node cannot (no leader, cut off from it): then its state
// may predate a revoke, and ACL tokens are refused.
func (a *Access) ensureACLFresh(ctx context.Context) (caughtUp bool, err error) {
	left := a.aclFreshLeft()
	switch {
	case left > aclFreshFor/2:
		return false, nil
	case left > 0:
		a.startCatchUp() // renew it before it runs out, without waiting
		return false, nil
	}
	a.catchUp(ctx)
	if a.aclFreshLeft() <= 0 {
		return true, &model.Error{Code: model.CodeUnavailable,
			Message: "node " + a.cfg.NodeID + " cannot confirm its ACL state is current (no answer from the leader), so it accepts no ACL token for now; try another node"}
	}
	return true, nil
}

// aclFreshLeft is how long this node's ACL state stays fresh (<= 0: not).
func (a *Access) aclFreshLeft() time.Duration {
	a.catchMu.Lock()
	defer a.catchMu.Unlock()
	return time.Until(a.lease.until)
}

// renewACLLease records a read barrier that began at start and succeeded.
func (a *Access) renewACLLease(start time.Time) {
	a.catchMu.Lock()
	defer a.catchMu.Unlock()
	if u := start.Add(aclFreshFor); u.After(a.lease.until) {
		a.lease.until = u
	}
}

// recheckForwarded checks the principal a member forwarded against this
// node's own ACL state: an ACL token's principal (it carries the token's
// hash) must name a token that still exists and has not expired here.
func (a *Access) recheckForwarded(r *http.Request, p *model.Principal) error {
	if p.TokenHash == "" {
		return nil // not an ACL token (management, certificate...), or from an older node
	}
	a.usesToken(r, p.TokenHash)
	t, ok, err := a.state.TokenByHash(p.TokenHash)
	if err == nil && !ok {
		// The forwarding node may have applied the token's creation
		// before this one.
		a.catchUp(r.Context())
		t, ok, err = a.state.TokenByHash(p.TokenHash)
	}
	switch {
	case err != nil:
		return authUnavailable(err)
	case !ok:
		return errUnauthorized("token " + p.Name + " was revoked")
	case t.Expired(a.cfg.Now().UnixMilli()):
		return errUnauthorized("token " + t.Name + " expired at " + model.UnixMilli(t.ExpiresAt).Format(model.TimeLayout))
	}
	return nil
}

// waitRevoked returns once no member accepts a token revoked by a command
// that returned at committed: every member has applied the leader's
// current commit index, or, for those that do not say so, their ACL
// state can no longer predate the revoke (see aclFreshFor).
func (a *Access) waitRevoked(ctx context.Context, committed time.Time) {
	deadline := committed.Add(aclFreshFor + revokeMargin)
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	unconfirmed, err := a.confirmApplied(wctx)
	if err == nil && len(unconfirmed) == 0 {
		return
	}
	a.log.Warn("members did not confirm a token revoke; waiting until their ACL state must be fresh or refused",
		"members", fmt.Sprint(unconfirmed), "error", err, "wait", time.Until(deadline).Round(time.Millisecond))
	select {
	case <-time.After(time.Until(deadline)):
	case <-ctx.Done():
	}
}

// confirmApplied asks every member (this node too) to apply the leader's
// current commit index, in parallel, and returns those that did not
// within ctx.
func (a *Access) confirmApplied(ctx context.Context) ([]string, error) {
	idx, err := a.rep.LeaderIndex(ctx)
	if err != nil {
		return nil, err
	}
	members, err := a.rep.Members(ctx)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	for _, s := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			switch addr := s.HTTP; {
			case s.ID == a.cfg.NodeID:
				err = a.rep.WaitApplied(ctx, idx)
			case addr == "":
				err = fmt.Errorf("no HTTP address recorded")
			default:
				err = a.rep.Peer(addr).Do(ctx, client.Request{Method: http.MethodGet, Path: api.InternalPrefix + "applied",
					Query: map[string][]string{"index": {strconv.FormatUint(idx, 10)}}, NoRetry: true}, nil)
			}
			if err != nil {
				mu.Lock()
				failed = append(failed, s.ID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed, nil
}

// Requests still running when their token is revoked — event streams, log
// follows, executors' long polls — end too: every request's context can
// be cancelled by the agent, Authenticate records which ACL token a
// request runs with, and a watcher cancels the requests of tokens gone
// from the state each time a revoke (or a restore) is applied.

// tokenUse is one request and the ACL token it runs with, if any.
type tokenUse struct {
	cancel context.CancelFunc
	hash   string // set by Authenticate
}

type tokenUseKey struct{}

// tokenUses are the running requests by ACL token hash.
type tokenUses struct {
	mu   sync.Mutex
	reqs map[string]map[*tokenUse]struct{}
}

// TrackRequest makes r's context cancellable on a revoke of the token it
// will authenticate with; done forgets it. A request without a token or a
// forwarded principal is left as it is.
func (a *Access) TrackRequest(r *http.Request) (_ *http.Request, done func()) {
	if r.Header.Get("Authorization") == "" && r.Header.Get(api.HeaderPrincipal) == "" {
		return r, func() {}
	}
	ctx, cancel := context.WithCancel(r.Context())
	u := &tokenUse{cancel: cancel}
	return r.WithContext(context.WithValue(ctx, tokenUseKey{}, u)), func() {
		if u.hash != "" {
			a.uses.mu.Lock()
			delete(a.uses.reqs[u.hash], u)
			if len(a.uses.reqs[u.hash]) == 0 {
				delete(a.uses.reqs, u.hash)
			}
			a.uses.mu.Unlock()
		}
		cancel()
	}
}

// usesToken records that r runs with the ACL token of hash.
func (a *Access) usesToken(r *http.Request, hash string) {
	u, ok := r.Context().Value(tokenUseKey{}).(*tokenUse)
	if !ok || u.hash != "" {
		return
	}
	if api.IsRestore(r) {
		// A restore replaces every token with the saved state's: the
		// request that restores runs on to its answer, the outcome.
		return
	}
	a.uses.mu.Lock()
	defer a.uses.mu.Unlock()
	u.hash = hash
	if a.uses.reqs == nil {
		a.uses.reqs = map[string]map[*tokenUse]struct{}{}
	}
	if a.uses.reqs[hash] == nil {
		a.uses.reqs[hash] = map[*tokenUse]struct{}{}
	}
	a.uses.reqs[hash][u] = struct{}{}
}

// Run ends the running requests of revoked tokens until ctx ends: each
// time the state machine has applied a revoke, it cancels the running
// requests of the tokens gone.
func (a *Access) Run(ctx context.Context) {
	seen := a.state.TokensRevoked()
	for {
		ch := a.state.Changed()
		if n := a.state.TokensRevoked(); n != seen {
			seen = n
			a.cancelRevoked()
			if a.rep.IsLeader() {
				// An entry now carries the revoke's commit to the followers
				// at once, not at Raft's next idle round (50 ms), so the
				// revoke's wait for their confirmations is short.
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					defer cancel()
					_ = a.rep.Barrier(ctx)
				}()
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

func (a *Access) cancelRevoked() {
	a.uses.mu.Lock()
	hashes := make([]string, 0, len(a.uses.reqs))
	for h := range a.uses.reqs {
		hashes = append(hashes, h)
	}
	a.uses.mu.Unlock()
	for _, h := range hashes {
		if _, ok, err := a.state.TokenByHash(h); ok || err != nil {
			continue
		}
		a.uses.mu.Lock()
		n := len(a.uses.reqs[h])
		for u := range a.uses.reqs[h] {
			u.cancel()
		}
		a.uses.mu.Unlock()
		if n > 0 {
			a.log.Info("ended the running requests of a revoked token", "requests", n)
		}
	}
}
