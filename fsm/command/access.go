package command

import (
	"encoding/hex"

	"github.com/ax-scheduler/ax/model"
)

// The bodies of the ACL, secret, member-key and protocol commands
// (protocol 2).

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

// ACLPutToken is the body of TypeACLPutToken: the token to create, with
// its lifetime (the state machine stamps CreatedAt and ExpiresAt from the
// command's leader time).
type ACLPutToken struct {
	Token TokenRecord `json:"token"`
	TTLms int64       `json:"ttlMs,omitempty"`
}

// ACLBootstrap is the body of TypeACLBootstrap: the first admin token.
type ACLBootstrap struct {
	Token TokenRecord `json:"token"`
}

// SetMemberKey is the body of TypeSetMemberKey: 32 random bytes chosen by
// the leader that proposes it. The first one wins; later ones are no-ops.
type SetMemberKey struct {
	Key []byte `json:"key"`
}

// PutSecret is the body of TypePutSecret.
type PutSecret struct {
	Name      string `json:"name"`
	Value     []byte `json:"value"`
	Encrypted bool   `json:"encrypted,omitempty"`
}

// SetProto is the body of TypeSetProto: the protocol every member speaks,
// which a leader proposes once they all do. The state machine's protocol
// only rises.
type SetProto struct {
	Proto int `json:"proto"`
}

// MaxStoredSecret bounds a secret's stored value: the API's limit plus the
// encryption's overhead (version byte, nonce, tag).
const MaxStoredSecret = model.MaxSecretSize + 64

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

// Validate checks the token: the bootstrap token is an admin token.
func (b *ACLBootstrap) Validate(*Command) *model.Error {
	if e := b.Token.validate(); e != nil {
		return e
	}
	if b.Token.Role != model.RoleAdmin {
		return model.FieldErrorf("role", "the bootstrap token is an admin token")
	}
	return nil
}

// Validate checks the token and its lifetime.
func (p *ACLPutToken) Validate(c *Command) *model.Error {
	if e := p.Token.validate(); e != nil {
		return e
	}
	if p.TTLms < 0 {
		return model.FieldErrorf("ttl", "must not be negative")
	}
	return checkSpan(field("ttl"), c, p.TTLms, 0)
}

// Validate checks the name and the value's size.
func (p *PutSecret) Validate(*Command) *model.Error {
	if e := checkName(field("name"), p.Name); e != nil {
		return e
	}
	if len(p.Value) > MaxStoredSecret {
		return &model.Error{Code: model.CodeTooLarge, Field: "value", Message: "secret value too large"}
	}
	return nil
}

// Validate checks the key's length.
func (m *SetMemberKey) Validate(*Command) *model.Error {
	if len(m.Key) != 32 {
		return model.FieldErrorf("key", "want 32 bytes")
	}
	return nil
}

// Validate checks that this version speaks the protocol.
func (p *SetProto) Validate(*Command) *model.Error {
	if p.Proto < 1 || p.Proto > ProtoVersion {
		return model.FieldErrorf("proto", "protocol %d: this version speaks 1 to %d", p.Proto, ProtoVersion)
	}
	return nil
}
