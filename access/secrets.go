package access

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

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/replica"
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

// Sealer encrypts secret values with AES-256-GCM: version byte, 12-byte
// random nonce, ciphertext and tag. The secret's name is the additional
// data, so a value cannot be moved to another name.
type Sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*Sealer, error) {
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
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plain under name.
func (s *Sealer) Seal(name string, plain []byte) []byte {
	out := make([]byte, 1+s.aead.NonceSize(), 1+s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	out[0] = sealVersion
	_, _ = rand.Read(out[1:])
	return s.aead.Seal(out, out[1:], plain, []byte("ax-secret:"+name))
}

var errNoKey = errors.New("it is encrypted and this node has no -encrypt-key-file")

// Open decrypts what Seal sealed under name; a nil Sealer (no encrypt
// key) cannot.
func (s *Sealer) Open(name string, sealed []byte) ([]byte, error) {
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
func (a *Access) PutSecret(ctx context.Context, c api.Caller, name, value string) (*model.Secret, error) {
	body := command.PutSecret{Name: name, Value: []byte(value)}
	if a.sealer != nil {
		body.Value, body.Encrypted = a.sealer.Seal(name, []byte(value)), true
	}
	var out model.Secret
	if err := replica.Write(ctx, a.rep, c, command.TypePutSecret, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSecrets implements api.SecretBackend.
func (a *Access) ListSecrets(ctx context.Context) (*model.SecretList, error) {
	ss, err := a.state.Secrets()
	if err != nil {
		return nil, err
	}
	return &model.SecretList{Secrets: ss}, nil
}

// DeleteSecret implements api.SecretBackend.
func (a *Access) DeleteSecret(ctx context.Context, c api.Caller, name string) (*model.Secret, error) {
	var out model.Secret
	if err := replica.Write(ctx, a.rep, c, command.TypeDeleteSecret, command.TaskRef{Name: name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SecretValue returns a secret's plaintext, for a lease that references
// it.
func (a *Access) SecretValue(name string) (string, error) {
	rec, ok := a.state.Secret(name)
	if !ok {
		return "", fmt.Errorf("secret %q does not exist", name)
	}
	if !rec.Encrypted {
		return string(rec.Value), nil
	}
	plain, err := a.sealer.Open(name, rec.Value)
	if err != nil {
		return "", fmt.Errorf("secret %q: %w", name, err)
	}
	return string(plain), nil
}
