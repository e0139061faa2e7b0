package model

import (
	"sort"
	"strings"
)

// ACL roles, from least to most privileged; RoleExecutor stands apart.
// reader: every GET. operator: reader + trigger, submit, backfill,
// pause/resume, approve/reject/cancel/terminate. writer: operator + task
// apply/delete and secrets. admin: everything, including cluster membership
// and ACL tokens. executor: the executor protocol only (poll, heartbeat,
// complete, approval requests and their decisions), bound to one executor
// name and label set, on the attempts leased to that executor only.
const (
	RoleReader   = "reader"
	RoleOperator = "operator"
	RoleWriter   = "writer"
	RoleAdmin    = "admin"
	RoleExecutor = "executor"
)

// roleRank orders the roles that include one another.
var roleRank = map[string]int{RoleReader: 1, RoleOperator: 2, RoleWriter: 3, RoleAdmin: 4}

// ValidRole reports whether r is one of the roles above.
func ValidRole(r string) bool { return roleRank[r] > 0 || r == RoleExecutor }

// Principal is who a request acts as, once its credentials are verified.
type Principal struct {
	// Name is the token's name: the audit actor of every write.
	Name string `json:"name"`
	Role string `json:"role"`
	// Executor and Labels bind an executor-role token: it may poll only as
	// that executor and claim only those labels. Unbound (the legacy
	// -executor-token) lifts the binding.
	Executor string            `json:"executor,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Unbound  bool              `json:"unbound,omitempty"`
	// TokenHash is the SHA-256 (hex) of the ACL token the principal was
	// verified from, empty for other credentials. A node acting on a
	// request another node forwarded checks it against its own state, so
	// that a token revoked meanwhile is refused. Never shown by the API.
	TokenHash string `json:"tokenHash,omitempty"`
}

// NeedClientCert is in the message of the 401 a TLS node without tokens
// answers a client without a certificate of the cluster CA: the CLI
// recognizes it to hint at -client-cert rather than -token.
const NeedClientCert = "present a client certificate of the cluster CA"

// Can reports whether p holds role need: admin holds every role; reader,
// operator and writer include the ones below them; executor holds only
// itself.
func (p *Principal) Can(need string) bool {
	if p == nil {
		return false
	}
	if p.Role == RoleAdmin || p.Role == need {
		return true
	}
	have, ok1 := roleRank[p.Role]
	want, ok2 := roleRank[need]
	return ok1 && ok2 && have >= want
}

// ExecutorAllowed checks that p may act as executor name and claim labels:
// a 403 naming the field otherwise. Only executor-role principals are
// bound; admins and unbound executor tokens may act as any executor.
func (p *Principal) ExecutorAllowed(name string, labels map[string]string) error {
	if p == nil || p.Role != RoleExecutor || p.Unbound {
		return nil
	}
	if name != p.Executor {
		return &Error{Code: CodeForbidden, Field: "executor", Message: "token " + p.Name + " is bound to executor " + p.Executor + ", not " + name}
	}
	for _, k := range sortedKeys(labels) {
		if v, ok := p.Labels[k]; !ok || v != labels[k] {
			return &Error{Code: CodeForbidden, Field: "labels." + k, Message: "token " + p.Name + " may not claim label " + k + "=" + labels[k]}
		}
	}
	return nil
}

// ACLToken is an ACL token as the API shows it. Secret is set only in the
// answer that creates it: tokens are stored as SHA-256 hashes.
type ACLToken struct {
	Name      string            `json:"name"`
	Role      string            `json:"role"`
	Executor  string            `json:"executor,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	CreatedAt Time              `json:"createdAt"`
	CreatedBy string            `json:"createdBy,omitempty"`
	ExpiresAt *Time             `json:"expiresAt,omitempty"`
	Secret    string            `json:"secret,omitempty"`
}

// ACLTokenRequest creates a token (POST /v1/acl/tokens).
type ACLTokenRequest struct {
	Name     string            `json:"name"`
	Role     string            `json:"role"`
	Executor string            `json:"executor,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	// TTL, when set, makes the token expire that long after it is created.
	TTL Duration `json:"ttl,omitempty"`
}

// Validate checks a token request and names the offending field.
func (r *ACLTokenRequest) Validate() error {
	if err := ValidateName("name", r.Name); err != nil {
		return err
	}
	if !ValidRole(r.Role) {
		return FieldErrorf("role", "%q is not a role: use reader, operator, writer, admin or executor", r.Role)
	}
	if r.Role == RoleExecutor {
		if err := ValidateName("executor", r.Executor); err != nil {
			return FieldErrorf("executor", "an executor token is bound to one executor name: %v", err)
		}
		if err := ValidateLabels("labels", r.Labels); err != nil {
			return err
		}
	} else if r.Executor != "" || len(r.Labels) > 0 {
		return FieldErrorf("executor", "only executor tokens are bound to an executor and labels")
	}
	if r.TTL < 0 {
		return FieldErrorf("ttl", "must not be negative")
	}
	return nil
}

// ACLTokenList is the answer of GET /v1/acl/tokens.
type ACLTokenList struct {
	Tokens []ACLToken `json:"tokens"`
}

// MaxLabels bounds the labels of an executor (poll) or executor token.
const MaxLabels = 32

// ValidateLabels checks an executor's label set: at most MaxLabels pairs,
// keys like task labels, values at most 255 bytes.
func ValidateLabels(field string, labels map[string]string) error {
	if len(labels) > MaxLabels {
		return FieldErrorf(field, "at most %d labels, got %d", MaxLabels, len(labels))
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !labelKeyRE.MatchString(k) {
			return FieldErrorf(field+"."+k, "label keys are 1-63 characters of letters, digits, '.', '_', '/', '-'")
		}
		if v := labels[k]; len(v) > 255 || strings.ContainsAny(v, "\x00\n") {
			return FieldErrorf(field+"."+k, "label values are at most 255 bytes, without NUL or newline")
		}
	}
	return nil
}

// MaxSecretSize bounds a secret's value.
const MaxSecretSize = 64 << 10

// SecretRequest sets a secret (PUT /v1/secrets/{name}).
type SecretRequest struct {
	Value string `json:"value"`
}

// Secret describes a stored secret; its value is never returned.
type Secret struct {
	Name      string `json:"name"`
	Version   uint64 `json:"version"`
	Encrypted bool   `json:"encrypted"`
	CreatedAt Time   `json:"createdAt"`
	UpdatedAt Time   `json:"updatedAt"`
	UpdatedBy string `json:"updatedBy,omitempty"`
}

// SecretList is the answer of GET /v1/secrets.
type SecretList struct {
	Secrets []Secret `json:"secrets"`
}
