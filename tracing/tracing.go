// Package tracing exports OpenTelemetry traces of instances: one trace
// per instance, a span for each part of its life (its fire, each wait in
// the queue, each attempt and the lease handing it to an executor, each
// retry's backoff, each approval wait), and the W3C traceparent each
// attempt's action is handed. It is off unless the OTEL_* variables turn
// it on (Enabled); a nil *Tracer is off and every method is a no-op.
//
// Only the leader traces: it builds each span when the change that ends
// it commits, with explicit timestamps from what the instance records,
// and ids derived from the cluster's member key and the instance
// (ids.go), so a new leader continues the same traces.
package tracing

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// Config configures a Tracer.
type Config struct {
	// NodeID names this node (service.instance.id).
	NodeID  string
	Version string
	// Key returns the cluster's member key, which the ids derive from
	// (nil until the first leader set it).
	Key    func() []byte
	Logger hclog.Logger
	// Getenv reads the OTEL_* variables that turn tracing on and pick
	// the sampler (default os.Getenv; the OTLP exporter reads its own).
	Getenv func(string) string
	// Client replaces the OTLP/HTTP client (tests).
	Client otlptrace.Client
}

// Tracer builds and exports the spans of instances (nil: tracing off).
type Tracer struct {
	cfg      Config
	client   otlptrace.Client
	resource *resourcepb.Resource
	sampler  sampler
	// run's own: the spans built, not yet sent; the spans of the change
	// being handled, and the attributes common to them, encoded.
	batch  batching
	specs  []spec
	common []byte
	idb    idBuf

	// since is when each active instance entered its state, as this node
	// saw it while leading: the start of the wait that state is (run's
	// own). A wait that began under another leader, or as its instance
	// fired, starts at what the record says (fallbackStart).
	since map[uint64]entered
	key   atomic.Pointer[ids]

	// The changes to trace, built into spans off the state machine's
	// apply path: queued there (under mu) and taken whole by run every
	// drainEvery, which hands the slice back emptied as spare. A mutex
	// and an append cost the apply path less than a channel send per
	// change (~7 changes an instance). dropped counts the changes a full
	// queue turned away.
	mu      sync.Mutex
	queued  []fsm.InstanceChange
	spare   []fsm.InstanceChange
	dropped atomic.Int64
	flush   chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// queueSize bounds the changes waiting to become spans: beyond it a
// change is dropped (its spans missing from its trace) rather than slow
// the state machine.
const queueSize = 1 << 14

type entered struct {
	state   string
	attempt int
	at      int64
}

// maxSince bounds the since map (an entry is dropped when its instance
// leaves the state; one whose instance moved on while another node led
// stays until the map is full, then all go).
const maxSince = 1 << 20

// New returns the tracer the OTEL_* variables configure, nil when they
// leave tracing off.
func New(ctx context.Context, cfg Config) (*Tracer, error) {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	on, err := Enabled(cfg.Getenv)
	if err != nil || !on {
		return nil, err
	}
	s, err := parseSampler(cfg.Getenv)
	if err != nil {
		return nil, err
	}
	client := cfg.Client
	if client == nil {
		client = otlptracehttp.NewClient()
	}
	if err := client.Start(ctx); err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	// service.name defaults to ax; OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES (read last) override it.
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("ax"), semconv.ServiceInstanceID(cfg.NodeID),
		semconv.ServiceVersion(cfg.Version)), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	t := &Tracer{cfg: cfg, client: client, resource: &resourcepb.Resource{Attributes: keyValues(res.Attributes())}, sampler: s,
		since: map[uint64]entered{}, flush: make(chan chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{}), batch: newBatching(cfg.Getenv)}
	go t.run()
	if cfg.Logger != nil {
		cfg.Logger.Info("tracing on: exporting instance traces over OTLP/HTTP")
	}
	return t, nil
}

// Shutdown exports the spans not yet sent and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.once.Do(func() { close(t.stop) })
	select {
	case <-t.done:
	case <-ctx.Done():
	}
	if n := t.dropped.Load(); n > 0 && t.cfg.Logger != nil {
		t.cfg.Logger.Warn("tracing: changes dropped with the span queue full", "dropped", n)
	}
	return t.client.Stop(ctx)
}

// run builds the spans of the queued changes and sends them in batches
// (full, or every OTEL_BSP_SCHEDULE_DELAY), until Shutdown: then it builds
// and sends those still queued. It takes the queue every drainEvery
// rather than waking for each change: thousands of changes a second would
// otherwise cost as many wake-ups.
func (t *Tracer) run() {
	defer close(t.done)
	drain := time.NewTicker(drainEvery)
	defer drain.Stop()
	last := time.Now()
	for {
		select {
		case <-drain.C:
			t.drain()
			if time.Since(last) >= t.batch.delay {
				t.send()
				last = time.Now()
			}
		case done := <-t.flush:
			t.drain()
			t.send()
			close(done)
		case <-t.stop:
			t.drain()
			t.send()
			return
		}
	}
}

// drainEvery is how often run takes the queued changes.
const drainEvery = 20 * time.Millisecond

// drain builds the spans of every queued change.
func (t *Tracer) drain() {
	t.mu.Lock()
	q := t.queued
	t.queued = t.spare
	t.mu.Unlock()
	for i := range q {
		t.handle(&q[i])
	}
	clear(q) // what the changes point to (attempts, links) is not held
	t.spare = q[:0]
}

// ForceFlush exports the spans built so far.
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	// run drains the queue on the request: every change queued before
	// this call is built and sent.
	done := make(chan struct{})
	select {
	case t.flush <- done:
	case <-t.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ids derives the ids from the member key, read once it is set (it
// never changes).
func (t *Tracer) ids() *ids {
	if d := t.key.Load(); d != nil {
		return d
	}
	k := t.cfg.Key()
	d := newIDs(k)
	if k != nil {
		t.key.Store(&d)
	}
	return &d
}

// root is the instance a trace belongs to: a shard's sharded instance.
func root(id, parent uint64) uint64 {
	if parent != 0 {
		return parent
	}
	return id
}

// Traceparent is the W3C traceparent of attempt n of instance id (parent:
// its sharded instance, 0 if none): the attempt's span, which the
// action's own spans are children of. "" when tracing is off.
func (t *Tracer) Traceparent(id, parent uint64, n int) string {
	if t == nil {
		return ""
	}
	d := t.ids()
	tid := d.traceID(nil, root(id, parent))
	return traceparent(tid, d.spanID(nil, id, kindAttempt, n), t.sampler.sample(tid))
}

// PrepareJob puts the traceparent of a leased job's attempt into it.
func (t *Tracer) PrepareJob(job *model.Job) {
	if t == nil {
		return
	}
	id, err := model.ParseID(job.InstanceID)
	if err != nil {
		return
	}
	var parent uint64
	if job.Parent != "" {
		parent, _ = model.ParseID(job.Parent)
	}
	job.Traceparent = t.Traceparent(id, parent, job.Attempt)
}

// TraceID is instance id's trace (hex) when it is sampled, for an
// exemplar; "" when tracing is off or the trace is not sampled.
func (t *Tracer) TraceID(id, parent uint64) string {
	if t == nil {
		return ""
	}
	tid := t.ids().traceID(nil, root(id, parent))
	if !t.sampler.sample(tid) {
		return ""
	}
	return tid.String()
}

// Span names.
const (
	spanInstance = "ax.instance"
	spanShard    = "ax.shard"
	spanRerun    = "ax.rerun"
	spanFire     = "ax.fire"
	spanQueue    = "ax.queue"
	spanAttempt  = "ax.attempt"
	spanLease    = "ax.lease"
	spanRetry    = "ax.retry_backoff"
	spanApproval = "ax.approval"
	spanBlocked  = "ax.blocked"
)

// spec is one span to emit.
type spec struct {
	name       string
	kind, n    int
	start, end int64 // Unix ms
	attrs      [6]attr
	na         int    // attrs used
	err        string // non-empty: the span's status is an error
	link       []byte // a packed caller's trace context (Pack)
}

func (s *spec) str(k, v string) { s.attrs[s.na] = attr{key: k, s: v}; s.na++ }

func (s *spec) int(k string, v int64) { s.attrs[s.na] = attr{key: k, i: v, isInt: true}; s.na++ }
