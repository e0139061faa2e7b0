package fsm

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// ACL state: tokens by name (bktACLTokens: name → TokenRecord JSON), an
// index from the token's SHA-256 to its name (bktACLHashes), and two meta
// keys: keyACLBootstrapped (set once by acl_bootstrap) and keyMemberKey (the
// cluster's member key, set once by the first leader that can: nodes of a
// cluster without TLS present it to each other on /v1/internal routes).

// bootstrapCheck is acl_bootstrap's check: ACLs not bootstrapped yet,
// and the token's name and hash free.
func (w accessWrites) bootstrapCheck(b *command.ACLBootstrap) (none, *Result) {
	e := bootstrapRefusal(w.tx)
	if e == nil {
		e = putTokenRefusal(w.tx, &b.Token)
	}
	return none{}, refusal(e)
}

func (w accessWrites) aclBootstrap(b *command.ACLBootstrap) *Result {
	res := w.putToken(b.Token, 0)
	if res == nil {
		return nil
	}
	w.put(bktMeta, keyACLBootstrapped, u64key(uint64(w.cmd.Now)))
	return res
}

func (w clusterWrites) setMemberKey(m *command.SetMemberKey) *Result {
	if w.tx.Bucket(bktMeta).Get(keyMemberKey) == nil {
		w.put(bktMeta, keyMemberKey, m.Key)
	}
	return okResult(struct{}{})
}

// putTokenCheck is acl_put_token's check: the token's name and hash must
// be free.
func (w accessWrites) putTokenCheck(p *command.ACLPutToken) (none, *Result) {
	return none{}, refusal(putTokenRefusal(w.tx, &p.Token))
}

func (w accessWrites) aclPutToken(p *command.ACLPutToken) *Result {
	return w.putToken(p.Token, p.TTLms)
}

// putToken stores a new token (its check passed).
func (w accessWrites) putToken(t command.TokenRecord, ttlMs int64) *Result {
	t.CreatedAt, t.CreatedBy, t.ExpiresAt = w.cmd.Now, w.cmd.Actor, 0
	if ttlMs > 0 {
		t.ExpiresAt = w.cmd.Now + ttlMs
	}
	v, err := json.Marshal(&t)
	if err != nil {
		w.err = err
		return nil
	}
	w.put(bktACLTokens, []byte(t.Name), v)
	w.put(bktACLHashes, []byte(t.Hash), []byte(t.Name))
	// The hash in the answer lets the proposer tell its own token from the
	// remembered answer of an earlier try of the same request.
	return okResult(&t)
}

// namedToken is acl_delete_token's check: the token must exist. The
// last-admin rule depends on the command's time: apply checks it.
func (w accessWrites) namedToken(ref *command.TaskRef) (*command.TokenRecord, *Result) {
	t, ok := readToken(w.tx, ref.Name)
	if !ok {
		return nil, errResult(tokenNotFound(ref.Name))
	}
	return t, nil
}

func (w accessWrites) aclDeleteToken(ref *command.TaskRef, t *command.TokenRecord) *Result {
	if e := lastAdminRefusal(w.tx, t, w.cmd.Now); e != nil {
		return errResult(e)
	}
	w.del(bktACLTokens, []byte(t.Name))
	w.del(bktACLHashes, []byte(t.Hash))
	w.f.revokes.Add(1)
	return okResult(t.Model())
}

// The refusals of the ACL commands.

func bootstrapRefusal(tx *bolt.Tx) *model.Error {
	if tx.Bucket(bktMeta).Get(keyACLBootstrapped) != nil {
		return &model.Error{Code: model.CodeConflict, Message: "ACLs are already bootstrapped; ask an admin for a token"}
	}
	return nil
}

func putTokenRefusal(tx *bolt.Tx, t *command.TokenRecord) *model.Error {
	if tx.Bucket(bktACLTokens).Get([]byte(t.Name)) != nil {
		return &model.Error{Code: model.CodeConflict, Field: "name", Message: "a token named " + t.Name + " exists; revoke it first"}
	}
	if tx.Bucket(bktACLHashes).Get([]byte(t.Hash)) != nil {
		return &model.Error{Code: model.CodeConflict, Field: "hash", Message: "token already registered"}
	}
	return nil
}

// lastAdminRefusal refuses to revoke t if it is the last admin token
// alive at nowMs.
func lastAdminRefusal(tx *bolt.Tx, t *command.TokenRecord, nowMs int64) *model.Error {
	if t.Role == model.RoleAdmin && !t.Expired(nowMs) && liveAdmins(tx, nowMs) == 1 {
		return &model.Error{Code: model.CodePrecondition, Field: "name",
			Message: t.Name + " is the last admin token; create another admin token before revoking it"}
	}
	return nil
}

func tokenNotFound(name string) *model.Error {
	return &model.Error{Code: model.CodeNotFound, Field: "name", Message: "no token named " + name}
}

func readToken(tx *bolt.Tx, name string) (*command.TokenRecord, bool) {
	v := tx.Bucket(bktACLTokens).Get([]byte(name))
	if v == nil {
		return nil, false
	}
	var t command.TokenRecord
	if json.Unmarshal(v, &t) != nil {
		return nil, false
	}
	return &t, true
}

func liveAdmins(tx *bolt.Tx, nowMs int64) int {
	n := 0
	_ = tx.Bucket(bktACLTokens).ForEach(func(_, v []byte) error {
		var t command.TokenRecord
		if json.Unmarshal(v, &t) == nil && t.Role == model.RoleAdmin && !t.Expired(nowMs) {
			n++
		}
		return nil
	})
	return n
}

// aclCache holds what every request's authentication asks, as of an
// applied index: read again from bbolt only once the index has moved.
type aclCache struct {
	applied      uint64
	bootstrapped bool
	memberKey    []byte
	proto        int
}

// acl returns the cache, or why the state cannot be read (then nothing is
// cached: a state that cannot be read is never taken for an empty one).
func (q accessReads) acl() (*aclCache, error) {
	if err := q.f.Failed(); err != nil {
		return nil, model.Errorf(model.CodeUnavailable, "state machine unavailable: %v", err)
	}
	applied := q.f.applied.Load() // before the read: the cache is never newer than its tag
	if c := q.f.aclC.Load(); c != nil && c.applied == applied {
		return c, nil
	}
	c := &aclCache{applied: applied}
	err := q.f.view(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bktMeta)
		c.bootstrapped = meta.Get(keyACLBootstrapped) != nil
		c.proto = stateProto(tx)
		if k := meta.Get(keyMemberKey); len(k) > 0 {
			c.memberKey = append([]byte(nil), k...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	q.f.aclC.Store(c)
	return c, nil
}

// AuthState returns what authentication asks of the state: whether ACLs
// were bootstrapped (from then on every API request needs a token) and
// the cluster's member key (nil until a leader has set it; never shown by
// any API). An error means the state cannot be read (a state machine
// whose restore failed, or one being closed): authentication must then
// admit nobody.
func (q accessReads) AuthState() (bootstrapped bool, memberKey []byte, err error) {
	c, err := q.acl()
	if err != nil {
		return false, nil, err
	}
	return c.bootstrapped, c.memberKey, nil
}

// ACLBootstrapped reports whether ACLs were bootstrapped. When the state
// cannot be read it reports true, so that a caller fails closed;
// authentication uses AuthState, which says why.
func (q accessReads) ACLBootstrapped() bool {
	b, _, err := q.AuthState()
	return b || err != nil
}

// MemberKey returns the cluster's member key, nil until a leader has set
// it or when the state cannot be read. It is never shown by any API.
func (q clusterReads) MemberKey() []byte {
	_, k, _ := q.f.AuthState()
	return k
}

// TokenByHash returns the token whose SHA-256 (hex) is hash; an error
// when the state cannot be read.
func (q accessReads) TokenByHash(hash string) (*command.TokenRecord, bool, error) {
	var t *command.TokenRecord
	err := q.f.view(func(tx *bolt.Tx) error {
		if name := tx.Bucket(bktACLHashes).Get([]byte(hash)); name != nil {
			t, _ = readToken(tx, string(name))
		}
		return nil
	})
	return t, t != nil, err
}

// TokensRevoked counts the token revokes this state machine has applied
// (restores included): when it moves, a token may have gone.
func (q accessReads) TokensRevoked() uint64 { return q.f.revokes.Load() }

// Token returns a token by name.
func (q accessReads) Token(name string) (*command.TokenRecord, bool) {
	var t *command.TokenRecord
	_ = q.f.view(func(tx *bolt.Tx) error {
		t, _ = readToken(tx, name)
		return nil
	})
	return t, t != nil
}

// Tokens lists every token by name.
func (q accessReads) Tokens() ([]model.ACLToken, error) {
	out := []model.ACLToken{}
	err := q.f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktACLTokens).ForEach(func(_, v []byte) error {
			var t command.TokenRecord
			if err := json.Unmarshal(v, &t); err != nil {
				return err
			}
			out = append(out, t.Model())
			return nil
		})
	})
	return out, err
}

// Holder returns the executor that holds (or last held) an instance's
// current attempt, for the API to check that an executor token reports
// only on its own attempts.
func (q instanceReads) Holder(id uint64) (executor string, attempt int, ok bool) {
	_ = q.f.view(func(tx *bolt.Tx) error {
		r, err := readRecord(tx, id)
		if err == nil {
			executor, attempt, ok = r.Executor, int(r.Attempts), true
		}
		return nil
	})
	return executor, attempt, ok
}
