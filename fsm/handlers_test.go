package fsm

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/fsm/command"
)

// TestHandlers_EveryType: every type this version knows has its handler,
// but the batch (a frame of commands), and every handler is of a known
// type; no type needs a protocol above ProtoVersion.
func TestHandlers_EveryType(t *testing.T) {
	for _, typ := range command.Types() {
		if (handlerOf(typ) == nil) != (typ == command.TypeBatch) {
			t.Errorf("%s: handler %v", typ, handlerOf(typ))
		}
		if p := command.MinProto(typ); p < 1 || p > command.ProtoVersion {
			t.Errorf("%s needs protocol %d, this version speaks 1 to %d", typ, p, command.ProtoVersion)
		}
	}
	for i, h := range handlers {
		if h != nil && !command.Type(i).Known() {
			t.Errorf("a handler for type %d, which command does not know", i)
		}
	}
}

// TestFSM_PrecheckMatchesApplyRandomLog: over the determinism test's
// random logs, whenever Precheck answers a lone command from the state
// before its entry, applying the entry answers the same and changes
// nothing but the request bookkeeping: Precheck and apply share each
// type's check (handlers), so they cannot drift apart.
func TestFSM_PrecheckMatchesApplyRandomLog(t *testing.T) {
	answered := map[CommandType]int{}
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			g := newLogGen(seed, 0)
			entries := g.scripted(t)
			for range 800 {
				entries = append(entries, g.entry(t))
			}
			f := openTest(t, filepath.Join(t.TempDir(), "fsm.db"), true)
			for _, l := range entries {
				var pre *Result
				if c, err := command.Decode(l.Data); err == nil && c.Type != command.TypeBatch {
					pre = f.Precheck(c)
				}
				before := stateDigest(t, f)
				got := f.ApplyBatch([]*raft.Log{l})[0]
				if pre == nil {
					continue
				}
				c, _ := command.Decode(l.Data)
				answered[c.Type]++
				r, _ := got.(*Result)
				if r == nil || !reflect.DeepEqual(r.Err, pre.Err) || !bytes.Equal(r.Data, pre.Data) {
					t.Fatalf("entry %d (%s): Precheck answered %+v %s, apply %+v", l.Index, c.Type, pre.Err, pre.Data, got)
				}
				if stateDigest(t, f) != before {
					t.Fatalf("entry %d (%s): Precheck answered %+v %s, but applying it changed the state", l.Index, c.Type, pre.Err, pre.Data)
				}
			}
		})
	}
	t.Logf("answered by Precheck: %v", answered)
	if len(answered) < 10 {
		t.Errorf("Precheck answered commands of %d types only: %v", len(answered), answered)
	}
}
