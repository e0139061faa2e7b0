package fsm

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"

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

// PutSecret is the body of CmdPutSecret.
type PutSecret struct {
	Name      string `json:"name"`
	Value     []byte `json:"value"`
	Encrypted bool   `json:"encrypted,omitempty"`
}

// maxStoredSecret bounds a stored value: the API's limit plus the
// encryption's overhead (version byte, nonce, tag).
const maxStoredSecret = model.MaxSecretSize + 64

// Model describes the secret without its value.
func (s *SecretRecord) Model() model.Secret {
	return model.Secret{Name: s.Name, Version: s.Version, Encrypted: s.Encrypted,
		CreatedAt: model.UnixMilli(s.CreatedAt), UpdatedAt: model.UnixMilli(s.UpdatedAt), UpdatedBy: s.UpdatedBy}
}

func (w *writer) putSecret() *Result {
	var p PutSecret
	if e := w.decode(&p); e != nil {
		return errResult(e)
	}
	if err := model.ValidateName("name", p.Name); err != nil {
		return errResult(asModelError(err))
	}
	if len(p.Value) > maxStoredSecret {
		return errResult(&model.Error{Code: model.CodeTooLarge, Field: "value", Message: "secret value too large"})
	}
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

func (w *writer) deleteSecret() *Result {
	var ref TaskRef
	if e := w.decode(&ref); e != nil {
		return errResult(e)
	}
	if err := model.ValidateName("name", ref.Name); err != nil {
		return errResult(asModelError(err))
	}
	cur, e := deleteSecretRefusal(w.tx, ref.Name)
	if e != nil {
		return errResult(e)
	}
	w.del(bktSecrets, []byte(ref.Name))
	return okResult(cur.Model())
}

// deleteSecretRefusal returns the secret a delete removes, or not_found
// (shared by apply and Precheck).
func deleteSecretRefusal(tx *bolt.Tx, name string) (*SecretRecord, *model.Error) {
	s, ok := readSecret(tx, name)
	if !ok {
		return nil, &model.Error{Code: model.CodeNotFound, Field: "name", Message: "no secret named " + name}
	}
	return s, nil
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
func (f *FSM) Secret(name string) (*SecretRecord, bool) {
	var s *SecretRecord
	_ = f.view(func(tx *bolt.Tx) error {
		s, _ = readSecret(tx, name)
		return nil
	})
	return s, s != nil
}

// Secrets lists every secret, without values.
func (f *FSM) Secrets() ([]model.Secret, error) {
	out := []model.Secret{}
	err := f.view(func(tx *bolt.Tx) error {
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
