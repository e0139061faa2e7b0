package fsm

import "testing"

// TestFSM_UndecodableBodyWords: the answer to a body that does not decode
// is worded as the release before the command types moved to package
// command worded it (encoding/json names the Go type, "fsm.PutTask"):
// answers are remembered with request ids, so a replica of this release
// must store what one of the release before stores. The wants are that
// release's answers (db2326e; 5be4f55 for the channels' types).
func TestFSM_UndecodableBodyWords(t *testing.T) {
	cases := []struct {
		typ        CommandType
		body, want string
	}{
		{CmdRemoveNode, `{"name":5}`, "undecodable remove_node body: json: cannot unmarshal number into Go struct field nodeRef.name of type string"},
		{CmdRemoveNode, `[1]`, "undecodable remove_node body: json: cannot unmarshal array into Go value of type fsm.nodeRef"},
		{CmdPutTask, `"x"`, "undecodable put_task body: json: cannot unmarshal string into Go value of type fsm.PutTask"},
		{CmdPutTask, `{"task":{"name":7}}`, "undecodable put_task body: json: cannot unmarshal number into Go struct field Task.task.name of type string"},
		{CmdHeartbeat, `{"i":{}}`, "undecodable heartbeat body: json: cannot unmarshal object into Go struct field Heartbeat.i of type []fsm.AttemptRef"},
		{CmdHeartbeat, `{"i":[{"i":"x"}]}`, "undecodable heartbeat body: json: cannot unmarshal string into Go struct field AttemptRef.i.i of type uint64"},
		{CmdFire, `{"t":[1]}`, "undecodable fire body: json: cannot unmarshal number into Go struct field Fire.t of type fsm.TaskFire"},
		{CmdExpire, `{"i":[true]}`, "undecodable expire body: json: cannot unmarshal bool into Go struct field Expire.i of type fsm.ExpireItem"},
		{CmdACLPutToken, `{"token":[]}`, "undecodable acl_put_token body: json: cannot unmarshal array into Go struct field ACLPutToken.token of type fsm.TokenRecord"},
		{CmdACLBootstrap, `{"token":{"labels":[1]}}`, "undecodable acl_bootstrap body: json: cannot unmarshal array into Go struct field TokenRecord.token.labels of type map[string]string"},
		{CmdAlertUpdate, `{"items":[1]}`, "undecodable alert_update body: json: cannot unmarshal number into Go struct field AlertUpdate.items of type fsm.AlertChange"},
		{CmdPutChannel, `{"channel":1}`, "undecodable put_channel body: json: cannot unmarshal number into Go struct field PutChannel.channel of type model.Channel"},
		// The channels moved from package model to model/channel: the
		// wants are the answers of the release before (5be4f55).
		{CmdPutChannel, `{"channel":{"email":1}}`, "undecodable put_channel body: json: cannot unmarshal number into Go struct field Channel.channel.email of type model.EmailChannel"},
		{CmdPutChannel, `{"channel":{"email":{"to":[1]}}}`, "undecodable put_channel body: json: cannot unmarshal number into Go struct field EmailChannel.channel.email.to of type string"},
		{CmdPutChannel, `{"channel":{"match":[]}}`, "undecodable put_channel body: json: cannot unmarshal array into Go struct field Channel.channel.match of type map[string]string"},
		{CmdSetNode, `{"proto":"x"}`, "undecodable set_node body: json: cannot unmarshal string into Go struct field NodeInfo.proto of type int"},
		{CmdDecide, `{"i":-1}`, "undecodable decide body: json: cannot unmarshal number -1 into Go struct field Decide.i of type uint64"},
		{CmdNote, `{"i":"x"}`, "undecodable note body: json: cannot unmarshal string into Go struct field Note.i of type []uint64"},
		{CmdCompleteBatch, `[1]`, "undecodable complete_batch body: json: cannot unmarshal number into Go value of type fsm.Complete"},
		{CmdCompleteBatch, `[{"r":{"executor":1}}]`, "undecodable complete_batch body: json: cannot unmarshal number into Go struct field CompleteRequest.r.executor of type string"},
		{CmdSubmit, "\x05", "undecodable submit body: fsm: corrupt submit"},
	}
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	for _, tc := range cases {
		c := raw(tc.typ, t0, tc.body)
		if r := f.Precheck(c); r == nil || r.Err == nil || r.Err.Message != tc.want {
			t.Errorf("%s %s: Precheck answered %+v,\nwant %q", tc.typ, tc.body, r, tc.want)
		}
		if r := a.apply(c); r.Err == nil || r.Err.Message != tc.want {
			t.Errorf("%s %s: apply answered %+v,\nwant %q", tc.typ, tc.body, r.Err, tc.want)
		}
	}
}
