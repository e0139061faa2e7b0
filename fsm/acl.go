package fsm

import (
	"encoding/hex"
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// ACL state: tokens by name (bktACLTokens: name → TokenRecord JSON), an
// index from the token's SHA-256 to its name (bktACLHashes), and two meta
// keys: keyACLBootstrapped (set once by acl_bootstrap) and keyMemberKey (the
// cluster's member key, set once by the first leader that can: nodes of a
// cluster without TLS present it to each other on /v1/internal routes).

// TokenRecord is an ACL token as the state machine stores it: never the
// token itself, only its SHA-256 (hex).
type TokenRecord struct {
	Name      string            `json:"name"`
	Role      string            `json:"role"`
	Executor  string            `json:"executor,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Hash      string            `json:"hash"`
	CreatedAt int64             `json:"createdAt"`
	CreatedBy string            `json:"createdBy,omitempty"`
	// ExpiresAt is Unix ms of leader time; 0 never.
	ExpiresAt int64 `json:"expiresAt,omitempty"`
}

// ACLPutToken is the body of CmdACLPutToken: the token to create, with its
// lifetime (the state machine stamps CreatedAt and ExpiresAt from the
// command's leader time).
type ACLPutToken struct {
	Token TokenRecord `json:"token"`
	TTLms int64       `json:"ttlMs,omitempty"`
}

// ACLBootstrap is the body of CmdACLBootstrap: the first admin token.
type ACLBootstrap struct {
	Token TokenRecord `json:"token"`
}

// SetMemberKey is the body of CmdSetMemberKey: 32 random bytes chosen by
// the leader that proposes it. The first one wins; later ones are no-ops.
type SetMemberKey struct {
	Key []byte `json:"key"`
}

// Model returns the token as the API shows it (without its secret).
func (t *TokenRecord) Model() model.ACLToken {
	out := model.ACLToken{Name: t.Name, Role: t.Role, Executor: t.Executor, Labels: t.Labels,
		CreatedAt: model.UnixMilli(t.CreatedAt), CreatedBy: t.CreatedBy}
	if t.ExpiresAt != 0 {
		e := model.UnixMilli(t.ExpiresAt)
		out.ExpiresAt = &e
	}
	return out
}

// Expired reports whether the token has expired at nowMs.
func (t *TokenRecord) Expired(nowMs int64) bool { return t.ExpiresAt != 0 && nowMs >= t.ExpiresAt }

// validate checks a token record the way the API does.
func (t *TokenRecord) validate() *model.Error {
	req := model.ACLTokenRequest{Name: t.Name, Role: t.Role, Executor: t.Executor, Labels: t.Labels}
	if err := req.Validate(); err != nil {
		return asModelError(err)
	}
	if b, err := hex.DecodeString(t.Hash); err != nil || len(b) != 32 {
		return model.FieldErrorf("hash", "want the token's SHA-256 in hex")
	}
	return nil
}

func (w *writer) aclBootstrap() *Result {
	var b ACLBootstrap
	if e := w.decode(&b); e != nil {
		return errResult(e)
	}
	if b.Token.Role != model.RoleAdmin {
		return errResult(model.FieldErrorf("role", "the bootstrap token is an admin token"))
	}
	if e := bootstrapRefusal(w.tx); e != nil {
		return errResult(e)
	}
	res := w.putToken(b.Token, 0)
	if res == nil || res.Err != nil {
		return res
	}
	w.put(bktMeta, keyACLBootstrapped, u64key(uint64(w.cmd.Now)))
	return res
}

func (w *writer) setMemberKey() *Result {
	var m SetMemberKey
	if e := w.decode(&m); e != nil {
		return errResult(e)
	}
	if len(m.Key) != 32 {
		return errResult(model.FieldErrorf("key", "want 32 bytes"))
	}
	if w.tx.Bucket(bktMeta).Get(keyMemberKey) == nil {
		w.put(bktMeta, keyMemberKey, m.Key)
	}
	return okResult(struct{}{})
}

func (w *writer) aclPutToken() *Result {
	var p ACLPutToken
	if e := w.decode(&p); e != nil {
		return errResult(e)
	}
	if p.TTLms < 0 {
		return errResult(model.FieldErrorf("ttl", "must not be negative"))
	}
	return w.putToken(p.Token, p.TTLms)
}

// putToken stores a new token; a name or hash in use is a conflict.
func (w *writer) putToken(t TokenRecord, ttlMs int64) *Result {
	if e := t.validate(); e != nil {
		return errResult(e)
	}
	if e := putTokenRefusal(w.tx, &t); e != nil {
		return errResult(e)
	}
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

func (w *writer) aclDeleteToken() *Result {
	var ref TaskRef
	if e := w.decode(&ref); e != nil {
		return errResult(e)
	}
	if err := model.ValidateName("name", ref.Name); err != nil {
		return errResult(asModelError(err))
	}
	t, e := deleteTokenRefusal(w.tx, ref.Name, w.cmd.Now)
	if e != nil {
		return errResult(e)
	}
	w.del(bktACLTokens, []byte(t.Name))
	w.del(bktACLHashes, []byte(t.Hash))
	w.f.revokes.Add(1)
	return okResult(t.Model())
}

// The refusals of the ACL commands, shared by apply and Precheck.

func bootstrapRefusal(tx *bolt.Tx) *model.Error {
	if tx.Bucket(bktMeta).Get(keyACLBootstrapped) != nil {
		return &model.Error{Code: model.CodeConflict, Message: "ACLs are already bootstrapped; ask an admin for a token"}
	}
	return nil
}

func putTokenRefusal(tx *bolt.Tx, t *TokenRecord) *model.Error {
	if tx.Bucket(bktACLTokens).Get([]byte(t.Name)) != nil {
		return &model.Error{Code: model.CodeConflict, Field: "name", Message: "a token named " + t.Name + " exists; revoke it first"}
	}
	if tx.Bucket(bktACLHashes).Get([]byte(t.Hash)) != nil {
		return &model.Error{Code: model.CodeConflict, Field: "hash", Message: "token already registered"}
	}
	return nil
}

// deleteTokenRefusal returns the token a revoke deletes, or why it may
// not: it does not exist, or it is the last admin token alive at nowMs.
func deleteTokenRefusal(tx *bolt.Tx, name string, nowMs int64) (*TokenRecord, *model.Error) {
	t, ok := readToken(tx, name)
	if !ok {
		return nil, tokenNotFound(name)
	}
	if t.Role == model.RoleAdmin && !t.Expired(nowMs) && liveAdmins(tx, nowMs) == 1 {
		return nil, &model.Error{Code: model.CodePrecondition, Field: "name",
			Message: name + " is the last admin token; create another admin token before revoking it"}
	}
	return t, nil
}

func tokenNotFound(name string) *model.Error {
	return &model.Error{Code: model.CodeNotFound, Field: "name", Message: "no token named " + name}
}

func readToken(tx *bolt.Tx, name string) (*TokenRecord, bool) {
	v := tx.Bucket(bktACLTokens).Get([]byte(name))
	if v == nil {
		return nil, false
	}
	var t TokenRecord
	if json.Unmarshal(v, &t) != nil {
		return nil, false
	}
	return &t, true
}

func liveAdmins(tx *bolt.Tx, nowMs int64) int {
	n := 0
	_ = tx.Bucket(bktACLTokens).ForEach(func(_, v []byte) error {
		var t TokenRecord
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
func (f *FSM) acl() (*aclCache, error) {
	if err := f.Failed(); err != nil {
		return nil, model.Errorf(model.CodeUnavailable, "state machine unavailable: %v", err)
	}
	applied := f.applied.Load() // before the read: the cache is never newer than its tag
	if c := f.aclC.Load(); c != nil && c.applied == applied {
		return c, nil
	}
	c := &aclCache{applied: applied}
	err := f.view(func(tx *bolt.Tx) error {
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
	f.aclC.Store(c)
	return c, nil
}

// AuthState returns what authentication asks of the state: whether ACLs
// were bootstrapped (from then on every API request needs a token) and
// the cluster's member key (nil until a leader has set it; never shown by
// any API). An error means the state cannot be read (a state machine
// whose restore failed, or one being closed): authentication must then
// admit nobody.
func (f *FSM) AuthState() (bootstrapped bool, memberKey []byte, err error) {
	c, err := f.acl()
	if err != nil {
		return false, nil, err
	}
	return c.bootstrapped, c.memberKey, nil
}

// ACLBootstrapped reports whether ACLs were bootstrapped. When the state
// cannot be read it reports true, so that a caller fails closed;
// authentication uses AuthState, which says why.
func (f *FSM) ACLBootstrapped() bool {
	b, _, err := f.AuthState()
	return b || err != nil
}

// MemberKey returns the cluster's member key, nil until a leader has set
// it or when the state cannot be read. It is never shown by any API.
func (f *FSM) MemberKey() []byte {
	_, k, _ := f.AuthState()
	return k
}

// TokenByHash returns the token whose SHA-256 (hex) is hash; an error
// when the state cannot be read.
func (f *FSM) TokenByHash(hash string) (*TokenRecord, bool, error) {
	var t *TokenRecord
	err := f.view(func(tx *bolt.Tx) error {
		if name := tx.Bucket(bktACLHashes).Get([]byte(hash)); name != nil {
			t, _ = readToken(tx, string(name))
		}
		return nil
	})
	return t, t != nil, err
}

// TokensRevoked counts the token revokes this state machine has applied
// (restores included): when it moves, a token may have gone.
func (f *FSM) TokensRevoked() uint64 { return f.revokes.Load() }

// Token returns a token by name.
func (f *FSM) Token(name string) (*TokenRecord, bool) {
	var t *TokenRecord
	_ = f.view(func(tx *bolt.Tx) error {
		t, _ = readToken(tx, name)
		return nil
	})
	return t, t != nil
}

// Tokens lists every token by name.
func (f *FSM) Tokens() ([]model.ACLToken, error) {
	out := []model.ACLToken{}
	err := f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktACLTokens).ForEach(func(_, v []byte) error {
			var t TokenRecord
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
func (f *FSM) Holder(id uint64) (executor string, attempt int, ok bool) {
	_ = f.view(func(tx *bolt.Tx) error {
		r, err := readRecord(tx, id)
		if err == nil {
			executor, attempt, ok = r.Executor, int(r.Attempts), true
		}
		return nil
	})
	return executor, attempt, ok
}
