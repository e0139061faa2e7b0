package command

import (
	"fmt"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
)

// PutChannel is the body of TypePutChannel: a channel definition whose
// write-only values travel in Secret and Password (sealed by the
// proposing node when it has a key). An empty one keeps the stored value
// if the channel's type still uses it.
type PutChannel struct {
	Channel           channel.Channel `json:"channel"`
	Secret            []byte          `json:"secret,omitempty"`
	SecretEncrypted   bool            `json:"secretEncrypted,omitempty"`
	Password          []byte          `json:"password,omitempty"`
	PasswordEncrypted bool            `json:"passwordEncrypted,omitempty"`
	// SealedURL, from protocol 6, is the URL of a channel of a type that
	// has one (every type but email) sealed by the proposing node (Channel.URL then holds its redacted
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

// ProtoChatChannels is the protocol from which put_channel takes the chat
// robots' types (dingtalk, wecom, feishu): a replica of an earlier
// release refuses them.
const ProtoChatChannels = 7

// ProtoRefusal is what a put of this channel is refused at protocol
// proto, for a new proposal (Precheck, the API): a chat robot's type
// before every member speaks ProtoChatChannels; nil when it may be
// proposed.
func (p *PutChannel) ProtoRefusal(proto int) *model.Error {
	if !channel.IsChat(p.Channel.Type) || proto >= ProtoChatChannels {
		return nil
	}
	return &model.Error{Code: model.CodePrecondition, Field: "type",
		Message: fmt.Sprintf("type %s needs protocol %d, the cluster is at protocol %d: upgrade every member first", p.Channel.Type, ProtoChatChannels, proto)}
}

// Sealed reports whether every value of the put that can be sealed is:
// the write-only values and, for every type but email, the URL.
func (p *PutChannel) Sealed() bool {
	urlSealed := len(p.SealedURL) > 0 || !channel.HasURL(p.Channel.Type)
	return urlSealed && (len(p.Secret) == 0 || p.SecretEncrypted) && (len(p.Password) == 0 || p.PasswordEncrypted)
}

// maxStoredChannelSecret bounds a stored write-only value: the API's
// limit plus the encryption's overhead.
const maxStoredChannelSecret = channel.MaxSecret + 64

// Validate normalizes and checks the definition, and checks that each
// write-only value and the sealed URL fit and belong to the channel's
// type.
func (p *PutChannel) Validate(*Command) *model.Error {
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
	if len(p.SealedURL) > channel.MaxURL+64 {
		return model.FieldErrorf("url", "too large")
	}
	if len(p.SealedURL) > 0 && !channel.HasURL(c.Type) {
		return model.FieldErrorf("url", "not for type %s", c.Type)
	}
	if len(p.Secret) > 0 && !channel.HasSecret(c.Type) {
		return model.FieldErrorf("secret", "only for types webhook, dingtalk and feishu")
	}
	if len(p.Password) > 0 && c.Type != channel.TypeEmail {
		return model.FieldErrorf("email.password", "only for type email")
	}
	return nil
}
