package tracing

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"
)

// Span kinds: the part of an instance's life a span covers. With the
// instance and a number (the attempt) they derive the span's id.
const (
	kindInstance = iota + 1 // the instance, from its fire time to its end
	kindFire                // its fire time to when it fired
	kindQueue               // READY until attempt n started
	kindAttempt             // attempt n
	kindLease               // attempt n's lease until its executor confirmed it
	kindRetry               // the backoff after attempt n
	kindApproval            // waiting for approval (after n attempts)
	kindBlocked             // BLOCKED (after n attempts)
	kindRun                 // a re-run, n its fire time (rerunOf)
)

// ids derives an instance's trace and span ids from the cluster's key
// (the member key, the same on every member) and what the instance
// records, so whichever node leads derives the same ids: a new leader
// continues the traces the old one began, and the traceparent an attempt
// is handed names a span the leader emits when the attempt ends. An id
// is the start of SHA-256(k, parts), k = SHA-256("ax-trace", key): a
// keyed hash, so ids are neither guessable nor the key learnable from
// them, computed on the stack (one hash of two blocks).
type ids struct{ k [sha256.Size]byte }

func newIDs(key []byte) ids {
	return ids{k: sha256.Sum256(append([]byte("ax-trace\x00"), key...))}
}

func (d ids) sum(parts ...uint64) [sha256.Size]byte {
	var b [sha256.Size + 4*8]byte
	copy(b[:], d.k[:])
	for i, p := range parts {
		binary.BigEndian.PutUint64(b[sha256.Size+8*i:], p)
	}
	return sha256.Sum256(b[:sha256.Size+8*len(parts)])
}

// traceID is the trace of instance id (a shard's is its instance's: pass
// the sharded instance).
func (d ids) traceID(id uint64) trace.TraceID {
	s := d.sum(0, id)
	t := trace.TraceID(s[:16])
	if !t.IsValid() {
		t[15] = 1
	}
	return t
}

// spanID is the span of kind for instance id and number n.
func (d ids) spanID(id uint64, kind int, n int) trace.SpanID {
	s := d.sum(1, id, uint64(kind), uint64(n))
	sp := trace.SpanID(s[:8])
	if !sp.IsValid() {
		sp[7] = 1
	}
	return sp
}

// traceparent renders a W3C traceparent header value.
func traceparent(t trace.TraceID, s trace.SpanID, sampled bool) string {
	b := make([]byte, 0, 55)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, t[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, s[:])
	if sampled {
		return string(append(b, "-01"...))
	}
	return string(append(b, "-00"...))
}

// ParseTraceparent parses a W3C traceparent header value (version 00, or
// a later version's first four fields): its trace id, span id and
// whether it is sampled; ok false when it is not a valid one.
func ParseTraceparent(s string) (t trace.TraceID, sp trace.SpanID, sampled, ok bool) {
	if len(s) < 55 || (len(s) > 55 && s[55] != '-') || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return t, sp, false, false
	}
	var ver, flags [1]byte
	if _, err := hex.Decode(ver[:], []byte(s[:2])); err != nil || ver[0] == 0xff || (ver[0] == 0 && len(s) != 55) {
		return t, sp, false, false
	}
	if _, err := hex.Decode(t[:], []byte(s[3:35])); err != nil {
		return t, sp, false, false
	}
	if _, err := hex.Decode(sp[:], []byte(s[36:52])); err != nil {
		return t, sp, false, false
	}
	if _, err := hex.Decode(flags[:], []byte(s[53:55])); err != nil {
		return t, sp, false, false
	}
	if !t.IsValid() || !sp.IsValid() || s != lowerHex(s) {
		return t, sp, false, false
	}
	return t, sp, flags[0]&1 == 1, true
}

// lowerHex returns s with its hex digits in lower case (W3C: upper case
// is invalid).
func lowerHex(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'F' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// Pack packs a traceparent header value into what an instance records
// (command.LinkSize bytes: trace id, span id, flags); nil when it is not
// a valid one.
func Pack(tp string) []byte {
	t, s, sampled, ok := ParseTraceparent(tp)
	if !ok {
		return nil
	}
	b := make([]byte, 0, 25)
	b = append(b, t[:]...)
	b = append(b, s[:]...)
	return append(b, byte(flags(sampled)))
}

// validLink says whether b is a packed trace context (Pack).
func validLink(b []byte) bool {
	_, ok := unpack(b)
	return ok
}

// unpack is Pack's inverse (ok false for anything but a packed context).
func unpack(b []byte) (trace.SpanContext, bool) {
	if len(b) != 25 {
		return trace.SpanContext{}, false
	}
	var t trace.TraceID
	var s trace.SpanID
	copy(t[:], b[:16])
	copy(s[:], b[16:24])
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: t, SpanID: s, TraceFlags: trace.TraceFlags(b[24]) & trace.FlagsSampled, Remote: true})
	return sc, sc.IsValid()
}
