package agent

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// EncryptKeySize is the size of the key -encrypt-key-file holds: AES-256.
const EncryptKeySize = 32

// ReadEncryptKey reads a key file written by ax keygen: the base64 of
// EncryptKeySize random bytes. warn is set when the file is readable by
// others than its owner.
func ReadEncryptKey(path string) (key []byte, warn string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", fmt.Errorf("encrypt key: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		warn = fmt.Sprintf("encrypt key file %s is readable by others (mode %v); chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("encrypt key: %w", err)
	}
	key, err = base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != EncryptKeySize {
		return nil, "", fmt.Errorf("encrypt key: %s must hold the base64 of %d random bytes (make one with ax keygen)", path, EncryptKeySize)
	}
	return key, warn, nil
}

// NewEncryptKey returns a fresh key as ax keygen prints it.
func NewEncryptKey() string {
	var b [EncryptKeySize]byte
	_, _ = rand.Read(b[:])
	return base64.StdEncoding.EncodeToString(b[:])
}

// sealVersion starts every sealed value, so that the format can change.
const sealVersion = 1

// sealer encrypts secret values with AES-256-GCM: version byte, 12-byte
// random nonce, ciphertext and tag. The secret's name is the additional
// data, so a value cannot be moved to another name.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	if key == nil {
		return nil, nil
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

func (s *sealer) seal(name string, plain []byte) []byte {
	out := make([]byte, 1+s.aead.NonceSize(), 1+s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	out[0] = sealVersion
	_, _ = rand.Read(out[1:])
	return s.aead.Seal(out, out[1:], plain, []byte("ax-secret:"+name))
}

var errNoKey = errors.New("it is encrypted and this node has no -encrypt-key-file")

func (s *sealer) open(name string, sealed []byte) ([]byte, error) {
	if s == nil {
		return nil, errNoKey
	}
	n := s.aead.NonceSize()
	if len(sealed) < 1+n || sealed[0] != sealVersion {
		return nil, errors.New("not a sealed value")
	}
	plain, err := s.aead.Open(nil, sealed[1:1+n], sealed[1+n:], []byte("ax-secret:"+name))
	if err != nil {
		return nil, errors.New("cannot decrypt it: is -encrypt-key-file the cluster's key?")
	}
	return plain, nil
}

// PutSecret implements api.SecretBackend. With -encrypt-key-file the value
// is sealed here, before it is proposed: the Raft log, the state machine
// and snapshots hold only ciphertext.
func (a *Agent) PutSecret(ctx context.Context, c api.Caller, name, value string) (*model.Secret, error) {
	body := command.PutSecret{Name: name, Value: []byte(value)}
	if a.sealer != nil {
		body.Value, body.Encrypted = a.sealer.seal(name, []byte(value)), true
	}
	var out model.Secret
	if err := a.command(ctx, c, command.TypePutSecret, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSecrets implements api.SecretBackend.
func (a *Agent) ListSecrets(ctx context.Context) (*model.SecretList, error) {
	ss, err := a.fsm.Secrets()
	if err != nil {
		return nil, err
	}
	return &model.SecretList{Secrets: ss}, nil
}

// DeleteSecret implements api.SecretBackend.
func (a *Agent) DeleteSecret(ctx context.Context, c api.Caller, name string) (*model.Secret, error) {
	var out model.Secret
	if err := a.command(ctx, c, command.TypeDeleteSecret, command.TaskRef{Name: name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// secretValue returns a secret's plaintext for a lease.
func (a *Agent) secretValue(name string) (string, error) {
	rec, ok := a.fsm.Secret(name)
	if !ok {
		return "", fmt.Errorf("secret %q does not exist", name)
	}
	if !rec.Encrypted {
		return string(rec.Value), nil
	}
	plain, err := a.sealer.open(name, rec.Value)
	if err != nil {
		return "", fmt.Errorf("secret %q: %w", name, err)
	}
	return string(plain), nil
}

// addSecrets puts the values of the secrets job's action references into
// the job, as the lease hands it to its executor. One that cannot be read
// is left out: the executor then fails the attempt, naming it, and this
// node logs why (never a value).
// prepareJob completes a leased job before the dispatcher hands it out:
// its effective timeout and the values of the secrets it references.
func (a *Agent) prepareJob(job *model.Job) {
	effectiveTimeout(job, a.cfg.DefaultTimeout)
	a.addSecrets(job)
}

// effectiveTimeout sets the job's policy.timeout to the one its attempt
// runs with, in a form every executor reads: the task's, else (unset, and
// no http action.timeout) the agent's default; a timeout of "none"
// becomes 0, no timeout (an executor older than protocol 4 could not
// decode "none").
func effectiveTimeout(job *model.Job, def time.Duration) {
	switch {
	case job.Policy.Timeout == model.NoTimeout:
		job.Policy.Timeout = 0
	case job.Policy.Timeout == 0 && job.Action.Timeout == 0 && def > 0:
		job.Policy.Timeout = model.Timeout(def)
	}
}

func (a *Agent) addSecrets(job *model.Job) {
	names := model.SecretRefs(&job.Action)
	if len(names) == 0 {
		return
	}
	job.Secrets = make(map[string]string, len(names))
	for _, n := range names {
		v, err := a.secretValue(n)
		if err != nil {
			a.log.Warn("a secret of a leased job cannot be delivered", "task", job.Task, "execution", job.ExecutionID, "error", err)
			continue
		}
		job.Secrets[n] = v
	}
}
