package fsm

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// Notification channels live in bktChannels: name → ChannelRecord JSON
// (protocol 4). The write-only values (a webhook's HMAC key, an SMTP
// password) are kept beside the definition as the proposing node put
// them in the command: AES-256-GCM ciphertext when the cluster runs with
// -encrypt-key-file, as secret values are. From protocol 6 so is the URL
// of a webhook or slack channel (a Slack webhook's URL is its credential):
// SealedURL holds it sealed, and the definition's URL only its scheme and
// host (model.RedactURL).

// ChannelRecord is a stored channel: the put that made it (Channel with
// its Name, without Version or times; the values it kept) and when.
type ChannelRecord struct {
	PutChannel
	Version   uint64 `json:"version"`
	CreatedAt int64  `json:"createdAt"`
	UpdatedAt int64  `json:"updatedAt"`
	UpdatedBy string `json:"updatedBy,omitempty"`
}

// PutChannel is the body of CmdPutChannel: a channel definition whose
// write-only values travel in Secret and Password (sealed by the
// proposing node when it has a key). An empty one keeps the stored value
// if the channel's type still uses it.
type PutChannel struct {
	Channel           model.Channel `json:"channel"`
	Secret            []byte        `json:"secret,omitempty"`
	SecretEncrypted   bool          `json:"secretEncrypted,omitempty"`
	Password          []byte        `json:"password,omitempty"`
	PasswordEncrypted bool          `json:"passwordEncrypted,omitempty"`
	// SealedURL, from protocol 6, is a webhook or slack channel's URL
	// sealed by the proposing node (Channel.URL then holds its redacted
	// form). Before protocol 6 it is ignored, as a replica of an older
	// release, which does not know it, ignores it.
	SealedURL []byte `json:"sealedUrl,omitempty"`
	// IfVersion, from protocol 6, makes the put a compare-and-set: it is
	// refused (conflict) unless the stored channel is at this version.
	// The leader seals the values of channels stored before it had a key
	// so, without undoing a change made meanwhile.
	IfVersion uint64 `json:"ifVersion,omitempty"`
}

// ProtoSealedChannels is the protocol from which put_channel honors
// PutChannel.SealedURL and IfVersion.
const ProtoSealedChannels = 6

// Sealed reports whether every value of the put that can be sealed is:
// the write-only values and, for webhook and slack channels, the URL.
func (p *PutChannel) Sealed() bool {
	urlSealed := len(p.SealedURL) > 0 || (p.Channel.Type != model.ChannelWebhook && p.Channel.Type != model.ChannelSlack)
	return urlSealed && (len(p.Secret) == 0 || p.SecretEncrypted) && (len(p.Password) == 0 || p.PasswordEncrypted)
}

// maxStoredChannelSecret bounds a stored write-only value: the API's
// limit plus the encryption's overhead.
const maxStoredChannelSecret = model.MaxChannelSecret + 64

func (p *PutChannel) validate(*Command) *model.Error {
	c := &p.Channel
	if e := checkName(field("name"), c.Name); e != nil {
		return e
	}
	if c.Secret != "" || (c.Email != nil && c.Email.Password != "") {
		return model.Errorf(model.CodeInvalid, "write-only values travel outside the definition")
	}
	c.Normalize()
	if err := c.Validate(); err != nil {
		return asModelError(err)
	}
	if len(p.Secret) > maxStoredChannelSecret {
		return model.FieldErrorf("secret", "too large")
	}
	if len(p.Password) > maxStoredChannelSecret {
		return model.FieldErrorf("email.password", "too large")
	}
	if len(p.SealedURL) > model.MaxChannelURL+64 {
		return model.FieldErrorf("url", "too large")
	}
	if len(p.SealedURL) > 0 && c.Type != model.ChannelWebhook && c.Type != model.ChannelSlack {
		return model.FieldErrorf("url", "only for types webhook and slack")
	}
	if len(p.Secret) > 0 && c.Type != model.ChannelWebhook {
		return model.FieldErrorf("secret", "only for type webhook")
	}
	if len(p.Password) > 0 && c.Type != model.ChannelEmail {
		return model.FieldErrorf("email.password", "only for type email")
	}
	return nil
}

// Model describes the channel as the API answers it: write-only values
// shown only as set or not.
func (r *ChannelRecord) Model() model.Channel {
	c := r.Channel
	if c.Match != nil {
		m := make(map[string]string, len(c.Match))
		for k, v := range c.Match {
			m[k] = v
		}
		c.Match = m
	}
	c.Events = append([]string(nil), c.Events...)
	c.SecretSet = len(r.Secret) > 0
	if r.Channel.Email != nil {
		e := *r.Channel.Email
		e.To = append([]string(nil), e.To...)
		e.Password, e.PasswordSet = "", len(r.Password) > 0
		c.Email = &e
	}
	created, updated := model.UnixMilli(r.CreatedAt), model.UnixMilli(r.UpdatedAt)
	c.Version, c.CreatedAt, c.UpdatedAt, c.UpdatedBy = r.Version, &created, &updated, r.UpdatedBy
	return c
}

func (w *writer) putChannel() *Result {
	var p PutChannel
	if e := w.decode(&p); e != nil {
		return errResult(e)
	}
	def := p.Channel
	def.Version, def.CreatedAt, def.UpdatedAt, def.UpdatedBy, def.SecretSet = 0, nil, nil, "", false
	if def.Email != nil {
		e := *def.Email
		e.PasswordSet = false
		def.Email = &e
	}
	p.Channel = def
	if w.protoAt() < ProtoSealedChannels {
		p.SealedURL, p.IfVersion = nil, 0
	}
	cur, exists := readChannel(w.tx, def.Name)
	if p.IfVersion != 0 && (!exists || cur.Version != p.IfVersion) {
		return errResult(&model.Error{Code: model.CodeConflict, Field: "name", Message: "channel " + def.Name + " changed since"})
	}
	p.IfVersion = 0
	rec := ChannelRecord{PutChannel: p, Version: 1, CreatedAt: w.cmd.Now}
	if exists {
		rec.Version, rec.CreatedAt = cur.Version+1, cur.CreatedAt
		if len(rec.Secret) == 0 && def.Type == model.ChannelWebhook {
			rec.Secret, rec.SecretEncrypted = cur.Secret, cur.SecretEncrypted
		}
		if len(rec.Password) == 0 && def.Type == model.ChannelEmail {
			rec.Password, rec.PasswordEncrypted = cur.Password, cur.PasswordEncrypted
		}
	}
	if len(rec.Secret) == 0 {
		rec.Secret, rec.SecretEncrypted = nil, false
	}
	if len(rec.Password) == 0 {
		rec.Password, rec.PasswordEncrypted = nil, false
	}
	rec.UpdatedAt, rec.UpdatedBy = w.cmd.Now, w.cmd.Actor
	v, err := json.Marshal(&rec)
	if err != nil {
		w.err = err
		return nil
	}
	w.put(bktChannels, []byte(def.Name), v)
	return okResult(rec.Model())
}

func (w *writer) deleteChannel() *Result {
	var ref TaskRef
	if e := w.decode(&ref); e != nil {
		return errResult(e)
	}
	cur, e := deleteChannelRefusal(w.tx, ref.Name)
	if e != nil {
		return errResult(e)
	}
	w.del(bktChannels, []byte(ref.Name))
	return okResult(cur.Model())
}

// deleteChannelRefusal returns the channel a delete removes, or not_found
// (shared by apply and Precheck).
func deleteChannelRefusal(tx *bolt.Tx, name string) (*ChannelRecord, *model.Error) {
	c, ok := readChannel(tx, name)
	if !ok {
		return nil, &model.Error{Code: model.CodeNotFound, Field: "name", Message: "no channel named " + name}
	}
	return c, nil
}

func readChannel(tx *bolt.Tx, name string) (*ChannelRecord, bool) {
	b := tx.Bucket(bktChannels)
	if b == nil {
		return nil, false
	}
	v := b.Get([]byte(name))
	if v == nil {
		return nil, false
	}
	var c ChannelRecord
	if json.Unmarshal(v, &c) != nil {
		return nil, false
	}
	return &c, true
}

// notifyNamesRefusal refuses a task whose policy.notify names channels
// (entries that are not http(s) URLs) while the cluster's protocol is
// below 4: a replica of an earlier release holds policy.notify to URLs,
// so such a task would be stored on some replicas and refused on others.
// Inside apply (asReplica) the answer is the earlier release's, word for
// word, since results are remembered with request ids; Precheck says why.
func notifyNamesRefusal(t *model.Task, asReplica bool) *model.Error {
	for i, n := range t.Policy.Notify {
		if model.IsNotifyURL(n) {
			continue
		}
		if asReplica {
			return model.FieldErrorf("policy.notify", "entry %d: %q is not an absolute http(s) URL", i, n)
		}
		return model.FieldErrorf("policy.notify", "entry %d: %q names a channel: channels need every member at protocol 4 (upgrade every member first)", i, n)
	}
	return nil
}

// Channel returns a stored channel, write-only values included (sealed
// or not, as stored), for the leader's notifier. Never hand it to an API
// answer: use its Model.
func (f *FSM) Channel(name string) (*ChannelRecord, bool) {
	var c *ChannelRecord
	_ = f.view(func(tx *bolt.Tx) error {
		c, _ = readChannel(tx, name)
		return nil
	})
	return c, c != nil
}

// ChannelRecords returns every stored channel with its write-only values,
// by name, for the notifier.
func (f *FSM) ChannelRecords() ([]ChannelRecord, error) {
	out := []ChannelRecord{}
	err := f.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bktChannels)
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			var c ChannelRecord
			if err := json.Unmarshal(v, &c); err != nil {
				return err
			}
			out = append(out, c)
			return nil
		})
	})
	return out, err
}

// Channels lists every channel as the API answers it, by name.
func (f *FSM) Channels() ([]model.Channel, error) {
	recs, err := f.ChannelRecords()
	if err != nil {
		return nil, err
	}
	out := make([]model.Channel, len(recs))
	for i := range recs {
		out[i] = recs[i].Model()
	}
	return out, nil
}
