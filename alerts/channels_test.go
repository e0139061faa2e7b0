package alerts

import (
	"context"
	"errors"
	"testing"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
)

// atProto is a state machine at a protocol, and nothing else (a put
// refused for its protocol reads no more of it).
type atProto struct {
	State
	proto int
}

func (s atProto) Proto() int { return s.proto }

// TestChannels_ChatNeedsProto7: on a cluster below protocol 7 (a member
// of an earlier release) a chat robot's channel is refused before it is
// proposed, failed_precondition naming the type and the protocol, even
// when the leader, of the earlier release, would answer only that it
// does not know the type.
func TestChannels_ChatNeedsProto7(t *testing.T) {
	cs := NewChannels(Config{}, atProto{proto: 6}, nil, nil)
	for _, typ := range []string{channel.TypeDingTalk, channel.TypeWeCom, channel.TypeFeishu} {
		_, err := cs.PutChannel(context.Background(), api.Caller{Actor: "t"}, "chat", &channel.Channel{Type: typ, URL: "https://h/x"})
		var me *model.Error
		if !errors.As(err, &me) || me.Code != model.CodePrecondition || me.Field != "type" ||
			me.Message != "type "+typ+" needs protocol 7, the cluster is at protocol 6: upgrade every member first" {
			t.Errorf("%s at protocol 6: %v", typ, err)
		}
	}
}
