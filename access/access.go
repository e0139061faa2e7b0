package access

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/replica"
)

// Config configures a node's access control.
type Config struct {
	NodeID string
	// Token is the management token (-token): admin on every route, and
	// the credential of members of a cluster without a member key.
	Token string
	// ExecutorToken, when set, is accepted on the executor protocol only,
	// for any executor name (legacy: prefer ACL executor tokens).
	ExecutorToken string
	// LocalExecToken is the embedded executor's credential (in memory
	// only), bound to this node's name and ExecutorLabels.
	LocalExecToken string
	ExecutorLabels map[string]string
	// TLS: the node serves its API over TLS, so members are the
	// cluster's node certificates, and a cluster without tokens admits a
	// client certificate of its CA.
	TLS bool
	// EncryptKey, when set, seals secret and channel values (Sealer).
	EncryptKey []byte
	// Now is the node's time base (token expiry).
	Now    func() time.Time
	Logger hclog.Logger
}

// State is what access reads of the state machine (*fsm.FSM).
type State interface {
	AuthState() (bootstrapped bool, memberKey []byte, err error)
	ACLBootstrapped() bool
	TokenByHash(hash string) (*command.TokenRecord, bool, error)
	TokensRevoked() uint64
	Tokens() ([]model.ACLToken, error)
	Secret(name string) (*fsm.SecretRecord, bool)
	Secrets() ([]model.Secret, error)
	Holder(id uint64) (executor string, attempt int, ok bool)
	Changed() <-chan struct{}
}

// Replica is what access needs of the replica (*replica.Replica).
type Replica interface {
	replica.Proposer
	ReadBarrier(ctx context.Context) error
	LeaderIndex(ctx context.Context) (uint64, error)
	WaitApplied(ctx context.Context, index uint64) error
	IsLeader() bool
	Barrier(ctx context.Context) error
	Members(ctx context.Context) ([]replica.Member, error)
	Peer(addr string) *client.Client
}

// Access authenticates requests (api.Authenticator), manages ACL tokens
// and their revocation (api.ACLBackend) and secrets (api.SecretBackend),
// and seals values with the cluster's encrypt key.
type Access struct {
	cfg    Config
	log    hclog.Logger
	state  State
	rep    Replica
	sealer *Sealer // nil without an encrypt key
	uses   tokenUses

	// catchUp's shared read barrier and the freshness of the ACL state
	// it gives (revoke.go).
	catchMu sync.Mutex
	catchCh chan struct{}
	lease   aclLease
}

var (
	_ api.Authenticator = (*Access)(nil)
	_ api.ACLBackend    = (*Access)(nil)
	_ api.SecretBackend = (*Access)(nil)
)

// New returns a node's access control; an encrypt key of the wrong size
// is an error.
func New(cfg Config, state State, rep Replica) (*Access, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	sl, err := newSealer(cfg.EncryptKey)
	if err != nil {
		return nil, fmt.Errorf("encrypt key: %w", err)
	}
	return &Access{cfg: cfg, log: cfg.Logger, state: state, rep: rep, sealer: sl}, nil
}

// ACLEnabled reports whether the node asks for credentials: ACLs are
// bootstrapped or a management token is set.
func (a *Access) ACLEnabled() bool { return a.cfg.Token != "" || a.state.ACLBootstrapped() }

// Sealer seals values with the cluster's encrypt key; nil without one.
func (a *Access) Sealer() *Sealer { return a.sealer }

// OwnAttempt checks, on the leader (whose state is current), that an
// executor-bound principal reports only on attempts leased to it: a 403
// otherwise, naming field. Instances that do not exist are left to the
// state machine.
func (a *Access) OwnAttempt(ctx context.Context, field string, id uint64) error {
	p := api.PrincipalFrom(ctx)
	if p == nil || p.Role != model.RoleExecutor || p.Unbound {
		return nil
	}
	if holder, _, ok := a.state.Holder(id); ok && holder != p.Executor {
		return &model.Error{Code: model.CodeForbidden, Field: field,
			Message: "instance " + model.FormatID(id) + " is not leased to executor " + p.Executor}
	}
	return nil
}
