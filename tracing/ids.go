package tracing

import (
	"crypto/aes"
	"crypto/cipher"
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
// is AES-128 under k = SHA-256("ax-trace", key)[:16] of one block naming
// it (a trace: 0, the instance; a span: 1, its kind, its number, the
// instance): a keyed permutation, so distinct ids never collide before
// a span id's truncation to 8 bytes, and ids are neither guessable nor
// the key learnable from them. One block costs ~20 ns with AES-NI
// against ~120 ns for a keyed SHA-256 of the same parts (the first
// build's), and an instance's life derives ~27 ids.
type ids struct{ b cipher.Block }

// idBuf is the blocks an id is derived in: the cipher takes slices
// through an interface, so arrays on the caller's stack would move to
// the heap at every call. A nil *idBuf allocates one.
type idBuf struct{ in, out [aes.BlockSize]byte }

func newIDs(key []byte) ids {
	k := sha256.Sum256(append([]byte("ax-trace\x00"), key...))
	b, err := aes.NewCipher(k[:16])
	if err != nil {
		panic(err) // unreachable: 16 bytes is a valid AES key
	}
	return ids{b: b}
}

// traceID is the trace of instance id (a shard's is its instance's: pass
// the sharded instance).
func (d ids) traceID(buf *idBuf, id uint64) trace.TraceID {
	if buf == nil {
		buf = new(idBuf)
	}
	buf.in = [aes.BlockSize]byte{}
	binary.BigEndian.PutUint64(buf.in[8:], id)
	d.b.Encrypt(buf.out[:], buf.in[:])
	t := trace.TraceID(buf.out)
	if !t.IsValid() {
		t[15] = 1
	}
	return t
}

// spanID is the span of kind for instance id and number n (an attempt,
// or a re-run's fire time in Unix ms: below 2^48, which is what the
// block holds of it).
func (d ids) spanID(buf *idBuf, id uint64, kind int, n int) trace.SpanID {
	if buf == nil {
		buf = new(idBuf)
	}
	binary.BigEndian.PutUint64(buf.in[:8], uint64(n)&(1<<48-1))
	buf.in[0], buf.in[1] = 1, byte(kind)
	binary.BigEndian.PutUint64(buf.in[8:], id)
	d.b.Encrypt(buf.out[:], buf.in[:])
	sp := trace.SpanID(buf.out[:8])
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
