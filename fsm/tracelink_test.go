package fsm

import (
	"bytes"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// rawRecord is instance id's record as stored.
func rawRecord(t *testing.T, f *FSM, id uint64) *record {
	t.Helper()
	var r *record
	err := f.view(func(tx *bolt.Tx) error {
		var err error
		r, err = decodeRecord(id, tx.Bucket(bktInstances).Get(u64key(id)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRecord_LinkRoundTrip: the trace link, the record's last field,
// survives the codec with and without the shard fields before it, and a
// record without it encodes as before.
func TestRecord_LinkRoundTrip(t *testing.T) {
	link := bytes.Repeat([]byte{7}, command.LinkSize)
	base := record{ID: 7, State: stReady, Source: 1, CreatedAt: t0, ScheduledAt: t0, FiredAt: t0, TaskVersion: 1, Task: "a"}
	plain := base.encode()
	for _, r := range []record{{Link: link}, {Link: link, Parent: 9, Shards: 3, Pin: "e1"}, {Link: link, Canary: true, Pool: "p"}} {
		want := base
		want.Link, want.Parent, want.Shards, want.Pin, want.Canary, want.Pool = r.Link, r.Parent, r.Shards, r.Pin, r.Canary, r.Pool
		b := want.encode()
		got, err := decodeRecord(7, b)
		if err != nil || !bytes.Equal(got.Link, link) || got.Parent != want.Parent || got.Shards != want.Shards || got.Pin != want.Pin ||
			got.Canary != want.Canary || got.Pool != want.Pool {
			t.Errorf("round trip of %+v: %+v, %v", want, got, err)
		}
		if _, err := decodeRecord(7, b[:len(b)-1]); err == nil {
			t.Errorf("a truncated link decoded")
		}
	}
	if string(base.encode()) != string(plain) {
		t.Error("a record without a link encodes differently")
	}
}

// TestFSM_TraceLink: from protocol 8 a submit's and a trigger's trace
// link is recorded (and reported with the instance's changes); below it
// is dropped, as an older replica would; a link of the wrong size is
// refused, naming the field.
func TestFSM_TraceLink(t *testing.T) {
	link := bytes.Repeat([]byte{3}, command.LinkSize)
	for _, proto := range []int{7, 8} {
		fx := newPolicyFixture(t, proto)
		fx.mustPut(eventTask("a", model.Policy{}))
		var s model.Submitted
		if err := fx.do(CmdTrigger, "", Trigger{Task: "a", Link: link}).Decode(&s); err != nil {
			t.Fatal(err)
		}
		id, _ := model.ParseID(s.ID)
		fx.now += 10
		res, err := DecodeSubmitResult(fx.a.apply(&Command{Type: CmdSubmit, Now: fx.now,
			Body: EncodeSubmit(&Submit{Task: "a", Items: []SubmitItem{{DelayMs: 60_000}}, Link: link})}))
		if err != nil {
			t.Fatal(err)
		}
		subID, _ := model.ParseID(res.Instances[0].ID)
		for _, n := range []uint64{id, subID} {
			got := rawRecord(t, fx.f, n).Link
			if (proto >= 8) != bytes.Equal(got, link) || (proto < 8 && got != nil) {
				t.Errorf("protocol %d: instance %d records link %x", proto, n, got)
			}
		}
		if r := fx.do(CmdTrigger, "", Trigger{Task: "a", Link: link[:3]}); r.Err == nil || r.Err.Field != "traceparent" {
			t.Errorf("protocol %d: a 3-byte link: %v", proto, r.Err)
		}
	}
}
