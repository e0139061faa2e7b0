package fsm

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// FuzzDecodeCommand decodes arbitrary bytes as a command and, when that
// works, as a batch body: decoding never panics, and encoding what was
// decoded is stable (decoding the encoding gives the same encoding again;
// the first encoding may differ from the input only where the input used
// a longer varint than needed).
func FuzzDecodeCommand(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil {
			return
		}
		enc := c.Encode()
		c2, err := DecodeCommand(enc)
		if err != nil {
			t.Fatalf("an encoded command does not decode: %v", err)
		}
		if again := c2.Encode(); !bytes.Equal(again, enc) {
			t.Fatalf("encoding is not stable:\n%q\n%q", enc, again)
		}
		cmds, err := decodeBatch(c.Body)
		if err != nil {
			return
		}
		body := EncodeBatch(c.Now, c.Node, cmds).Body
		cmds2, err := decodeBatch(body)
		if err != nil || len(cmds2) != len(cmds) {
			t.Fatalf("an encoded batch does not decode: %v", err)
		}
		if again := EncodeBatch(c.Now, c.Node, cmds2).Body; !bytes.Equal(again, body) {
			t.Fatalf("batch encoding is not stable")
		}
	})
}

// FuzzSubmitCodec decodes arbitrary bytes with the compact codecs of the
// hot path (a submit body, a submit result, a complete_batch body):
// decoding never panics, and encode(decode(x)) is stable.
func FuzzSubmitCodec(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := decodeSubmit(b); err == nil {
			enc := EncodeSubmit(s)
			s2, err := decodeSubmit(enc)
			if err != nil {
				t.Fatalf("an encoded submit does not decode: %v", err)
			}
			if again := EncodeSubmit(s2); !bytes.Equal(again, enc) {
				t.Fatalf("submit encoding is not stable:\n%q\n%q", enc, again)
			}
		}
		if r, err := DecodeSubmitResult(&Result{Data: b}); err == nil {
			items := make([]submitted, len(r.Instances))
			for i, in := range r.Instances {
				id, err := model.ParseID(in.ID)
				if err != nil {
					t.Fatalf("decoded id %q: %v", in.ID, err)
				}
				items[i] = submitted{id: id, due: in.ScheduledAt.Millis(), state: code(stateNames, in.State), existing: in.Existing}
			}
			enc := encodeSubmitResult(items)
			r2, err := DecodeSubmitResult(&Result{Data: enc})
			if err != nil || len(r2.Instances) != len(items) {
				t.Fatalf("an encoded submit result does not decode: %v", err)
			}
		}
		if cs, err := decodeCompleteBatch(b); err == nil {
			enc := EncodeCompleteBatch(cs)
			cs2, err := decodeCompleteBatch(enc)
			if err != nil {
				t.Fatalf("an encoded complete_batch does not decode: %v", err)
			}
			if again := EncodeCompleteBatch(cs2); !bytes.Equal(again, enc) {
				t.Fatalf("complete_batch encoding is not stable")
			}
		}
	})
}

// TestCodecFuzzSeeds checks (AX_WRITE_SEEDS=1: writes) the committed
// corpora of FuzzDecodeCommand and FuzzSubmitCodec.
func TestCodecFuzzSeeds(t *testing.T) {
	st := buildFuzzState(t, t.TempDir())
	cmds := map[string][]any{}
	for name, b := range fuzzSeeds(t, st) {
		if name != "batch_body" {
			cmds[name] = []any{b}
		}
	}
	checkSeeds(t, "FuzzDecodeCommand", cmds)
	sub := EncodeSubmit(&Submit{Task: "job", Items: []SubmitItem{{DelayMs: 1000, Payload: []byte(`{"a":1}`), Key: "k"}, {AtMs: t0}}})
	res := encodeSubmitResult([]submitted{{id: 5 << 20, due: t0, state: stScheduled}, {id: 5<<20 | 1, due: t0 + 1, state: stReady, existing: true}})
	cb := EncodeCompleteBatch([]Complete{{ID: 9, Attempt: 2, Report: model.CompleteRequest{Executor: "e1", Success: true, ExitCode: -1, Output: "o"}}})
	cbr := EncodeCompleteBatch([]Complete{{ID: 9, Attempt: 2, Report: model.CompleteRequest{Executor: "e1", Success: true, Output: "o", Result: []byte(`{"rows":42}`)}}})
	checkSeeds(t, "FuzzSubmitCodec", map[string][]any{
		"submit":                 {sub},
		"submit_truncated":       {sub[:len(sub)-3]},
		"submit_huge_count":      {append(binary.AppendUvarint([]byte{3, 'j', 'o', 'b'}, 1<<20), 0, 0, 0, 0)},
		"submit_long_varint":     {[]byte{0x83, 0x00, 'j', 'o', 'b', 0x01, 0x00, 0x00, 0x00, 0x00}},
		"submit_result":          {res},
		"submit_result_short":    {res[:5]},
		"complete_batch":         {cb},
		"complete_batch_result":  {cbr},
		"complete_batch_json":    {[]byte(`[{"i":9,"a":2,"r":{"executor":"e1","success":true}}]`)},
		"complete_batch_garbage": {[]byte{1, 0xff, 0xff, 0xff, 0x7f, 0}},
	})
}
