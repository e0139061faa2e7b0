package fsm

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
)

// Notification channels live in bktChannels: name → ChannelRecord JSON
// (protocol 4). The write-only values (a webhook's HMAC key, an SMTP
// password) are kept beside the definition as the proposing node put
// them in the command: AES-256-GCM ciphertext when the cluster runs with
// -encrypt-key-file, as secret values are. From protocol 6 so is the URL
// of a channel of every type but email (a Slack webhook's URL is its
// credential, and so are the chat robots' of protocol 7): SealedURL holds
// it sealed, and the definition's URL only its scheme and host
// (channel.RedactURL).

// ChannelRecord is a stored channel: the put that made it (Channel with
// its Name, without Version or times; the values it kept) and when.
type ChannelRecord struct {
	command.PutChannel
	Version   uint64 `json:"version"`
	CreatedAt int64  `json:"createdAt"`
	UpdatedAt int64  `json:"updatedAt"`
	UpdatedBy string `json:"updatedBy,omitempty"`
}

// Model describes the channel as the API answers it: write-only values
// shown only as set or not.
func (r *ChannelRecord) Model() channel.Channel {
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

// putChannelCheck is put_channel's check: the chat robots' types only
// from protocol 7 (command.ProtoChatChannels); from protocol 6 a put with
// IfVersion is refused unless the stored channel is at that version.
// Else it finds the stored channel, if any.
func (w alertWrites) putChannelCheck(p *command.PutChannel) (*ChannelRecord, *Result) {
	if e := p.ProtoRefusal(w.protoAt()); e != nil {
		if !w.dry {
			// As a replica of protocol 6 or earlier decides (its
			// validation does not know the type), word for word, since
			// results are remembered with request ids; Precheck says why.
			e = model.FieldErrorf("type", "%q: use webhook, slack or email", p.Channel.Type)
		}
		return nil, errResult(e)
	}
	cur, exists := readChannel(w.tx, p.Channel.Name)
	if p.IfVersion != 0 && w.protoAt() >= command.ProtoSealedChannels && (!exists || cur.Version != p.IfVersion) {
		return nil, errResult(&model.Error{Code: model.CodeConflict, Field: "name", Message: "channel " + p.Channel.Name + " changed since"})
	}
	return cur, nil
}

func (w alertWrites) putChannel(p *command.PutChannel, cur *ChannelRecord) *Result {
	def := p.Channel
	def.Version, def.CreatedAt, def.UpdatedAt, def.UpdatedBy, def.SecretSet = 0, nil, nil, "", false
	if def.Email != nil {
		e := *def.Email
		e.PasswordSet = false
		def.Email = &e
	}
	p.Channel = def
	if w.protoAt() < command.ProtoSealedChannels {
		p.SealedURL = nil
	}
	p.IfVersion = 0
	rec := ChannelRecord{PutChannel: *p, Version: 1, CreatedAt: w.cmd.Now}
	if cur != nil {
		rec.Version, rec.CreatedAt = cur.Version+1, cur.CreatedAt
		if len(rec.Secret) == 0 && channel.HasSecret(def.Type) {
			rec.Secret, rec.SecretEncrypted = cur.Secret, cur.SecretEncrypted
		}
		if len(rec.Password) == 0 && def.Type == channel.TypeEmail {
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

// namedChannel is delete_channel's check: the channel must exist.
func (w alertWrites) namedChannel(ref *command.TaskRef) (*ChannelRecord, *Result) {
	c, ok := readChannel(w.tx, ref.Name)
	if !ok {
		return nil, errResult(&model.Error{Code: model.CodeNotFound, Field: "name", Message: "no channel named " + ref.Name})
	}
	return c, nil
}

func (w alertWrites) deleteChannel(ref *command.TaskRef, cur *ChannelRecord) *Result {
	w.del(bktChannels, []byte(ref.Name))
	return okResult(cur.Model())
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
func (q alertReads) Channel(name string) (*ChannelRecord, bool) {
	var c *ChannelRecord
	_ = q.f.view(func(tx *bolt.Tx) error {
		c, _ = readChannel(tx, name)
		return nil
	})
	return c, c != nil
}

// ChannelRecords returns every stored channel with its write-only values,
// by name, for the notifier.
func (q alertReads) ChannelRecords() ([]ChannelRecord, error) {
	out := []ChannelRecord{}
	err := q.f.view(func(tx *bolt.Tx) error {
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
func (q alertReads) Channels() ([]channel.Channel, error) {
	recs, err := q.ChannelRecords()
	if err != nil {
		return nil, err
	}
	out := make([]channel.Channel, len(recs))
	for i := range recs {
		out[i] = recs[i].Model()
	}
	return out, nil
}
