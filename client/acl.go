package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/ax-scheduler/ax/model"
)

// ACLBootstrap creates the first admin token of a cluster and returns it
// with its secret; it fails with a conflict once ACLs are bootstrapped.
func (c *Client) ACLBootstrap(ctx context.Context) (*model.ACLToken, error) {
	var t model.ACLToken
	return &t, c.Do(ctx, Request{Method: http.MethodPost, Path: "/v1/acl/bootstrap"}, &t)
}

// CreateToken creates an ACL token; the answer holds its secret, shown
// this once.
func (c *Client) CreateToken(ctx context.Context, req model.ACLTokenRequest) (*model.ACLToken, error) {
	var t model.ACLToken
	return &t, c.Do(ctx, Request{Method: http.MethodPost, Path: "/v1/acl/tokens", Body: req}, &t)
}

// ListTokens lists ACL tokens (without secrets).
func (c *Client) ListTokens(ctx context.Context) (*model.ACLTokenList, error) {
	var l model.ACLTokenList
	return &l, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/acl/tokens"}, &l)
}

// RevokeToken deletes an ACL token by name.
func (c *Client) RevokeToken(ctx context.Context, name string) (*model.ACLToken, error) {
	var t model.ACLToken
	return &t, c.Do(ctx, Request{Method: http.MethodDelete, Path: "/v1/acl/tokens/" + url.PathEscape(name)}, &t)
}

// PutSecret creates or replaces a secret's value.
func (c *Client) PutSecret(ctx context.Context, name, value string) (*model.Secret, error) {
	var s model.Secret
	return &s, c.Do(ctx, Request{Method: http.MethodPut, Path: "/v1/secrets/" + url.PathEscape(name), Body: model.SecretRequest{Value: value}}, &s)
}

// ListSecrets lists the secrets' names and versions; values never leave
// the cluster but inside the leases of the attempts that use them.
func (c *Client) ListSecrets(ctx context.Context) (*model.SecretList, error) {
	var l model.SecretList
	return &l, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/secrets"}, &l)
}

// DeleteSecret deletes a secret.
func (c *Client) DeleteSecret(ctx context.Context, name string) (*model.Secret, error) {
	var s model.Secret
	return &s, c.Do(ctx, Request{Method: http.MethodDelete, Path: "/v1/secrets/" + url.PathEscape(name)}, &s)
}

// Executors lists the executors the leader heard from in the last minute.
func (c *Client) Executors(ctx context.Context) (*model.ExecutorList, error) {
	var l model.ExecutorList
	return &l, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/executors"}, &l)
}
