package fsm

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Secrets live in bktSecrets: name → SecretRecord JSON. The value is
// whatever the proposing node put in the command: AES-256-GCM ciphertext
// when the cluster runs with -encrypt-key-file (then the plaintext never
// reaches the Raft log, this file or a snapshot), else the plaintext.

// SecretRecord is a stored secret.
type SecretRecord struct {
	Name      string `json:"name"`
	Version   uint64 `json:"version"`
	Value     []byte `json:"value"`
	Encrypted bool   `json:"encrypted,omitempty"`
	CreatedAt int64  `json:"createdAt"`
	UpdatedAt int64  `json:"updatedAt"`
	UpdatedBy string `json:"updatedBy,omitempty"`
}

// Model describes the secret without its value.
func (s *SecretRecord) Model() model.Secret {
	return model.Secret{Name: s.Name, Version: s.Version, Encrypted: s.Encrypted,
		CreatedAt: model.UnixMilli(s.CreatedAt), UpdatedAt: model.UnixMilli(s.UpdatedAt), UpdatedBy: s.UpdatedBy}
}

func (w accessWrites) putSecret(p *command.PutSecret) *Result {
	rec := SecretRecord{Name: p.Name, Version: 1, CreatedAt: w.cmd.Now}
	if cur, ok := readSecret(w.tx, p.Name); ok {
		rec.Version, rec.CreatedAt = cur.Version+1, cur.CreatedAt
	}
	rec.Value, rec.Encrypted, rec.UpdatedAt, rec.UpdatedBy = p.Value, p.Encrypted, w.cmd.Now, w.cmd.Actor
	v, err := json.Marshal(&rec)
	if err != nil {
		w.err = err
		return nil
	}
	w.put(bktSecrets, []byte(p.Name), v)
	return okResult(rec.Model())
}

// namedSecret is delete_secret's check: the secret must exist.
func (w accessWrites) namedSecret(ref *command.TaskRef) (*SecretRecord, *Result) {
	s, ok := readSecret(w.tx, ref.Name)
	if !ok {
		return nil, errResult(&model.Error{Code: model.CodeNotFound, Field: "name", Message: "no secret named " + ref.Name})
	}
	return s, nil
}

func (w accessWrites) deleteSecret(ref *command.TaskRef, cur *SecretRecord) *Result {
	w.del(bktSecrets, []byte(ref.Name))
	return okResult(cur.Model())
}

func readSecret(tx *bolt.Tx, name string) (*SecretRecord, bool) {
	v := tx.Bucket(bktSecrets).Get([]byte(name))
	if v == nil {
		return nil, false
	}
	var s SecretRecord
	if json.Unmarshal(v, &s) != nil {
		return nil, false
	}
	return &s, true
}

// Secret returns a stored secret, value included, for the leader to deliver
// with a lease. Never hand it to an API answer.
func (q accessReads) Secret(name string) (*SecretRecord, bool) {
	var s *SecretRecord
	_ = q.f.view(func(tx *bolt.Tx) error {
		s, _ = readSecret(tx, name)
		return nil
	})
	return s, s != nil
}

// Secrets lists every secret, without values.
func (q accessReads) Secrets() ([]model.Secret, error) {
	out := []model.Secret{}
	err := q.f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktSecrets).ForEach(func(_, v []byte) error {
			var s SecretRecord
			if err := json.Unmarshal(v, &s); err != nil {
				return err
			}
			out = append(out, s.Model())
			return nil
		})
	})
	return out, err
}
