package tracing

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// The spans are encoded straight into the batch's bytes, each an OTLP
// Span message (opentelemetry/proto/trace/v1/trace.proto), rather than
// built as tracepb messages and marshalled at export: an instance's
// spans would otherwise cost a few dozen small allocations each (the
// span, its attributes and their values) and the protobuf library's
// reflection over them. The batch goes out as the Spans field of one
// ScopeSpans message, given to the OTLP client as that message's
// unknown fields, which protobuf marshals as they are (export.go).

// Field numbers of the OTLP messages written here.
const (
	fScopeSpansSpans = 2

	fSpanTraceID    = 1
	fSpanSpanID     = 2
	fSpanParent     = 4
	fSpanName       = 5
	fSpanKind       = 6
	fSpanStart      = 7
	fSpanEnd        = 8
	fSpanAttributes = 9
	fSpanLinks      = 13
	fSpanStatus     = 15
	fSpanFlags      = 16

	fLinkTraceID    = 1
	fLinkSpanID     = 2
	fLinkAttributes = 4
	fLinkFlags      = 6

	fStatusMessage = 2
	fStatusCode    = 3

	fKeyValueKey   = 1
	fKeyValueValue = 2

	fAnyString = 1
	fAnyInt    = 3

	spanKindInternal = 1
	statusCodeError  = 2
)

// attr is one span attribute: a string (s, or the bytes b), or an int
// when isInt.
type attr struct {
	key   string
	s     string
	b     []byte
	i     int64
	isInt bool
}

// appendAttr appends a as a KeyValue in field num of the message being
// written.
func appendAttr(b []byte, num protowire.Number, a attr) []byte {
	var value int // the AnyValue's size
	if a.isInt {
		value = protowire.SizeTag(fAnyInt) + protowire.SizeVarint(uint64(a.i))
	} else {
		value = protowire.SizeTag(fAnyString) + protowire.SizeBytes(len(a.s)+len(a.b))
	}
	kv := protowire.SizeTag(fKeyValueKey) + protowire.SizeBytes(len(a.key)) + protowire.SizeTag(fKeyValueValue) + protowire.SizeBytes(value)
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(kv))
	b = protowire.AppendTag(b, fKeyValueKey, protowire.BytesType)
	b = protowire.AppendString(b, a.key)
	b = protowire.AppendTag(b, fKeyValueValue, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(value))
	if a.isInt {
		b = protowire.AppendTag(b, fAnyInt, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(a.i))
	}
	b = protowire.AppendTag(b, fAnyString, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(len(a.s)+len(a.b)))
	return append(append(b, a.s...), a.b...)
}

// wireSpan is what appendSpan writes of a span.
type wireSpan struct {
	traceID    []byte // 16 bytes
	spanID     []byte // 8
	parent     []byte // 8, or none for a root
	name       string
	start, end uint64 // Unix ns
	attrs      []attr
	common     []byte // attributes already encoded (field 9 entries)
	err        string // non-empty: an error status with this message
	link       []byte // a packed trace context (Pack), or none
}

// appendSpan appends span s to b as an entry of ScopeSpans.spans, its
// body written in scratch first (for its length); it returns both.
func appendSpan(b, scratch []byte, s *wireSpan) ([]byte, []byte) {
	m := scratch[:0]
	m = protowire.AppendTag(m, fSpanTraceID, protowire.BytesType)
	m = protowire.AppendBytes(m, s.traceID)
	m = protowire.AppendTag(m, fSpanSpanID, protowire.BytesType)
	m = protowire.AppendBytes(m, s.spanID)
	if len(s.parent) > 0 {
		m = protowire.AppendTag(m, fSpanParent, protowire.BytesType)
		m = protowire.AppendBytes(m, s.parent)
	}
	m = protowire.AppendTag(m, fSpanName, protowire.BytesType)
	m = protowire.AppendString(m, s.name)
	m = protowire.AppendTag(m, fSpanKind, protowire.VarintType)
	m = protowire.AppendVarint(m, spanKindInternal)
	m = protowire.AppendTag(m, fSpanStart, protowire.Fixed64Type)
	m = protowire.AppendFixed64(m, s.start)
	m = protowire.AppendTag(m, fSpanEnd, protowire.Fixed64Type)
	m = protowire.AppendFixed64(m, s.end)
	for _, a := range s.attrs {
		m = appendAttr(m, fSpanAttributes, a)
	}
	m = append(m, s.common...)
	if len(s.link) == linkSize {
		n := protowire.SizeTag(fLinkTraceID) + protowire.SizeBytes(16) + protowire.SizeTag(fLinkSpanID) + protowire.SizeBytes(8) +
			protowire.SizeTag(fLinkFlags) + protowire.SizeFixed32() + len(linkAttr)
		m = protowire.AppendTag(m, fSpanLinks, protowire.BytesType)
		m = protowire.AppendVarint(m, uint64(n))
		m = protowire.AppendTag(m, fLinkTraceID, protowire.BytesType)
		m = protowire.AppendBytes(m, s.link[:16])
		m = protowire.AppendTag(m, fLinkSpanID, protowire.BytesType)
		m = protowire.AppendBytes(m, s.link[16:24])
		m = append(m, linkAttr...)
		m = protowire.AppendTag(m, fLinkFlags, protowire.Fixed32Type)
		m = protowire.AppendFixed32(m, uint32(s.link[24]&1))
	}
	if s.err != "" {
		n := protowire.SizeTag(fStatusMessage) + protowire.SizeBytes(len(s.err)) + protowire.SizeTag(fStatusCode) + protowire.SizeVarint(statusCodeError)
		m = protowire.AppendTag(m, fSpanStatus, protowire.BytesType)
		m = protowire.AppendVarint(m, uint64(n))
		m = protowire.AppendTag(m, fStatusMessage, protowire.BytesType)
		m = protowire.AppendString(m, s.err)
		m = protowire.AppendTag(m, fStatusCode, protowire.VarintType)
		m = protowire.AppendVarint(m, statusCodeError)
	}
	m = protowire.AppendTag(m, fSpanFlags, protowire.Fixed32Type)
	m = protowire.AppendFixed32(m, 1) // sampled (W3C trace flags)
	b = protowire.AppendTag(b, fScopeSpansSpans, protowire.BytesType)
	return protowire.AppendBytes(b, m), m
}

// linkAttr is the attribute of a link to a caller's trace.
var linkAttr = appendAttr(nil, fLinkAttributes, attr{key: "ax.link", s: "submitted by"})

// linkSize is the size of a packed trace context (Pack).
const linkSize = 25
