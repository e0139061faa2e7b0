package access

import (
	"context"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/replica"
)

// bootstrapTokenName names the token acl bootstrap creates.
const bootstrapTokenName = "bootstrap"

// ACLBootstrap implements api.ACLBackend.
func (a *Access) ACLBootstrap(ctx context.Context, c api.Caller) (*model.ACLToken, error) {
	if a.state.ACLBootstrapped() {
		return nil, &model.Error{Code: model.CodeConflict, Message: "ACLs are already bootstrapped; ask an admin for a token"}
	}
	rec := command.TokenRecord{Name: bootstrapTokenName, Role: model.RoleAdmin}
	return a.putToken(ctx, c, command.TypeACLBootstrap, &rec, func() any { return command.ACLBootstrap{Token: rec} })
}

// CreateToken implements api.ACLBackend. On a node without -token whose
// cluster has not bootstrapped ACLs, every request is admitted as admin,
// so a token would change nothing: it is refused with the next step.
func (a *Access) CreateToken(ctx context.Context, c api.Caller, req model.ACLTokenRequest) (*model.ACLToken, error) {
	if a.cfg.Token == "" && !a.state.ACLBootstrapped() {
		a.catchUp(ctx) // a bootstrap through another node a moment ago
	}
	if a.cfg.Token == "" && !a.state.ACLBootstrapped() {
		return nil, &model.Error{Code: model.CodePrecondition,
			Message: "ACLs are not bootstrapped, so this cluster admits every request as admin and a token would change nothing: run `ax acl bootstrap` first (it prints an admin token), then create tokens with it"}
	}
	rec := command.TokenRecord{Name: req.Name, Role: req.Role, Executor: req.Executor, Labels: req.Labels}
	return a.putToken(ctx, c, command.TypeACLPutToken, &rec, func() any {
		return command.ACLPutToken{Token: rec, TTLms: req.TTL.Std().Milliseconds()}
	})
}

// putToken makes a token secret, proposes its hash in the body built by
// body (after rec.Hash is set) and answers with the secret. The secret
// exists only in this answer: a retried request whose first answer was
// lost gets the first try's result, whose hash is not this secret's, and
// is told so rather than handed a secret that opens nothing.
func (a *Access) putToken(ctx context.Context, c api.Caller, t command.Type, rec *command.TokenRecord, body func() any) (*model.ACLToken, error) {
	secret := NewToken()
	rec.Hash = TokenHash(secret)
	var out command.TokenRecord
	if err := replica.Write(ctx, a.rep, c, t, body(), &out); err != nil {
		return nil, err
	}
	if out.Hash != rec.Hash {
		return nil, &model.Error{Code: model.CodeConflict, Field: "name",
			Message: "token " + out.Name + " was created by an earlier try of this request whose answer was lost; revoke it and create it again"}
	}
	m := out.Model()
	m.Secret = secret
	return &m, nil
}

// ListTokens implements api.ACLBackend.
func (a *Access) ListTokens(ctx context.Context) (*model.ACLTokenList, error) {
	ts, err := a.state.Tokens()
	if err != nil {
		return nil, err
	}
	return &model.ACLTokenList{Tokens: ts}, nil
}

// RevokeToken implements api.ACLBackend.
func (a *Access) RevokeToken(ctx context.Context, c api.Caller, name string) (*model.ACLToken, error) {
	var out model.ACLToken
	if err := replica.Write(ctx, a.rep, c, command.TypeACLDeleteToken, command.TaskRef{Name: name}, &out); err != nil {
		return nil, err
	}
	// Answered only once no node accepts the token (revoke.go).
	a.waitRevoked(ctx, time.Now())
	return &out, nil
}
