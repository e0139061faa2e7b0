package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// Defaults of SubmitterConfig.
const (
	DefaultSubmitLinger      = 2 * time.Millisecond
	DefaultSubmitMaxBatch    = 1000
	DefaultSubmitMaxBytes    = 1 << 20 // the server's default body limit
	DefaultSubmitMaxInFlight = 1
)

// ErrSubmitterClosed is returned by Submitter.Submit after Close.
var ErrSubmitterClosed = errors.New("client: submitter closed")

// SubmitterConfig configures a Submitter. The zero value is usable.
type SubmitterConfig struct {
	// MaxBatch bounds the submissions of one request (default 1000, at
	// most model.MaxSubmitBatch).
	MaxBatch int
	// MaxBytes bounds a request's body (default 1 MiB, the server's
	// default limit). A submission larger than it alone is sent alone.
	MaxBytes int
	// Linger bounds how long a batch waits for more submissions while a
	// request slot is free (default 2ms; negative: none). It ends early
	// once the batch holds as many submissions as the task's last request
	// answered: callers that submit again after each answer (a loop per
	// goroutine) go out together at once, and a lone caller submitting
	// one after another waits for nothing. Batches also form without it
	// while MaxInFlight requests are out: what arrives meanwhile goes in
	// the next request.
	Linger time.Duration
	// MaxInFlight bounds the requests out at once (default 1). The
	// Client sends each to the address that answered last, one node at a
	// time, so this is also the bound per node. The leader commits one
	// group at a time: with one request out, callers that come back at
	// different times still end up in one batch per commit; with two,
	// they may settle into two batches taking turns (on the reference
	// machine 64 goroutines did 6,400-9,800/s with one, 4,400-10,400/s
	// with two). More help when several tasks are submitted to at once
	// or a request can be slow.
	MaxInFlight int
}

// Submitter coalesces concurrent Submit calls, for any number of tasks,
// into array submissions: one request, one Raft entry, for many callers,
// each of whom still gets its own instance or error. It is the client
// side of the server's group commit, in the manner of a Kafka producer or
// a Pub/Sub publisher: while MaxInFlight requests are out, submissions
// collect per task; a batch leaves when a slot is free and it is full
// (MaxBatch, MaxBytes), as large as the task's last one, or its first
// submission has waited Linger.
//
// Every request carries an Idempotency-Key that the Client keeps through
// its retries (on another address too), so a batch whose answer was lost
// (a timeout, a leader change) is applied once: the retry is answered with
// the first instances. A submission the server refuses on its own (a past
// "at", a payload over the limit: an error naming its array element) fails
// only its caller, with the field named as for a single submission; the
// others are sent again as a new request. An error for the request as a
// whole goes to every caller of the batch. The request's key covers the
// Client's retries only: to submit again safely after an error whose
// outcome is unknown, give the submission its own IdempotencyKey.
//
// Use one Submitter for many goroutines; Close it to send what is queued.
// It is a type of its own, as a Pub/Sub topic's or a Kafka writer's
// batching is, rather than an option of Client: it holds a goroutine and
// queued submissions that only Close sends, and a Client needs no Close.
// It helps when many goroutines submit one instance each: a request costs
// the leader more than tens of submissions in an array, and a commit's
// round trip is shared by every submission in it. A lone caller gains
// nothing: after its first submission, which waits Linger, each leaves at
// once, with the round trip of Client.Submit.
type Submitter struct {
	c     *Client
	cfg   SubmitterConfig
	now   func() time.Time
	slots chan struct{} // one per request out
	wake  chan struct{}
	done  chan struct{} // closed when run has returned

	mu       sync.Mutex
	queues   map[string]*submitQueue // by task
	answered map[string]int          // by task: the callers its last request answered
	closed   bool
}

// submitQueue is one task's submissions that are not sent yet, oldest
// first.
type submitQueue struct {
	task  string
	items []*submission
	live  int // not cancelled
	bytes int // of the live items' encodings
}

// submission is one caller's item; done receives its outcome once.
type submission struct {
	body     []byte // the SubmitRequest as JSON
	at       time.Time
	sent     bool // handed to a request (under Submitter.mu)
	canceled bool // its caller left before it was sent (under Submitter.mu)
	done     chan submitOutcome
}

type submitOutcome struct {
	s   *model.Submitted
	err error
}

// NewSubmitter returns a Submitter sending through c; Close it when done.
func NewSubmitter(c *Client, cfg SubmitterConfig) *Submitter {
	return newSubmitter(c, cfg, time.Now)
}

// newSubmitter is NewSubmitter with a clock for the lingers (tests).
func newSubmitter(c *Client, cfg SubmitterConfig, now func() time.Time) *Submitter {
	switch {
	case cfg.Linger == 0:
		cfg.Linger = DefaultSubmitLinger
	case cfg.Linger < 0:
		cfg.Linger = 0
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultSubmitMaxBatch
	}
	cfg.MaxBatch = min(cfg.MaxBatch, model.MaxSubmitBatch)
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultSubmitMaxBytes
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultSubmitMaxInFlight
	}
	s := &Submitter{c: c, cfg: cfg, now: now, slots: make(chan struct{}, cfg.MaxInFlight), wake: make(chan struct{}, 1),
		done: make(chan struct{}), queues: map[string]*submitQueue{}, answered: map[string]int{}}
	go s.run()
	return s
}

// Submit creates one delayed instance of task, as Client.Submit does, in
// a request shared with other callers. If ctx ends before the submission
// was sent it is dropped and Submit returns ctx.Err(); if it ends while
// the request is out, Submit returns ctx.Err() at once but the instance
// may exist (give req an IdempotencyKey to submit it again safely).
func (s *Submitter) Submit(ctx context.Context, task string, req model.SubmitRequest) (*model.Submitted, error) {
	// What the server would refuse in any case fails here, without a
	// round trip (the payload's bound is the server's).
	if err := req.Validate("", math.MaxInt); err != nil {
		return nil, err
	}
	body, err := json.Marshal(&req)
	if err != nil {
		return nil, model.FieldErrorf("payload", "not JSON: %v", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	it := &submission{body: body, at: s.now(), done: make(chan submitOutcome, 1)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrSubmitterClosed
	}
	q := s.queues[task]
	if q == nil {
		q = &submitQueue{task: task}
		s.queues[task] = q
	}
	q.items = append(q.items, it)
	q.live++
	q.bytes += len(body)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	select {
	case o := <-it.done:
		return o.s, o.err
	case <-ctx.Done():
	}
	s.mu.Lock()
	if !it.sent && !it.canceled {
		it.canceled = true
		q.live--
		q.bytes -= len(it.body)
	}
	s.mu.Unlock()
	// It may have been answered meanwhile.
	select {
	case o := <-it.done:
		return o.s, o.err
	default:
		return nil, ctx.Err()
	}
}

// Close sends what is queued, waits for every request out to be answered
// (each bounded by the Client's RetryFor), and makes later Submit calls
// fail with ErrSubmitterClosed. It returns nil; it is safe to call twice.
func (s *Submitter) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.done
	return nil
}

// run cuts batches and sends them, MaxInFlight at a time, until Close has
// been called and everything queued was answered.
func (s *Submitter) run() {
	defer close(s.done)
	var inflight sync.WaitGroup
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		s.mu.Lock()
		ready, wait := s.readyLocked(s.now())
		closing := s.closed && len(s.queues) == 0
		s.mu.Unlock()
		if closing {
			inflight.Wait()
			return
		}
		if !ready {
			if wait > 0 {
				timer.Reset(wait)
			}
			select {
			case <-s.wake:
			case <-timer.C:
			}
			timer.Stop()
			continue
		}
		// A slot first: while every one is out, submissions collect.
		s.slots <- struct{}{}
		s.mu.Lock()
		task, batch := s.cutLocked(s.now())
		s.mu.Unlock()
		if batch == nil {
			<-s.slots
			continue
		}
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			defer func() { <-s.slots }()
			s.send(task, batch)
		}()
	}
}

// readyLocked reports whether a queue may be sent now and, if none may,
// how long until the first one's linger ends (0: nothing queued). It
// forgets the queues whose callers have all left.
func (s *Submitter) readyLocked(now time.Time) (bool, time.Duration) {
	wait := time.Duration(0)
	for task, q := range s.queues {
		q.trim()
		if q.live == 0 {
			delete(s.queues, task)
			continue
		}
		if s.sendable(q, now) {
			return true, 0
		}
		if w := s.cfg.Linger - now.Sub(q.items[0].at); wait == 0 || w < wait {
			wait = w
		}
	}
	return false, wait
}

// sendable reports whether q may leave now: full, closing, lingered, or
// as large as the task's last batch (its callers have come back).
func (s *Submitter) sendable(q *submitQueue, now time.Time) bool {
	if n := s.answered[q.task]; n > 0 && q.live >= n {
		return true
	}
	return s.closed || q.live >= s.cfg.MaxBatch || q.bytes+q.live+1 >= s.cfg.MaxBytes ||
		now.Sub(q.items[0].at) >= s.cfg.Linger
}

// cutLocked takes the first batch of the sendable queue that waited
// longest: up to MaxBatch submissions within MaxBytes, marked sent.
func (s *Submitter) cutLocked(now time.Time) (string, []*submission) {
	var q *submitQueue
	for _, c := range s.queues {
		c.trim()
		if c.live > 0 && s.sendable(c, now) && (q == nil || c.items[0].at.Before(q.items[0].at)) {
			q = c
		}
	}
	if q == nil {
		return "", nil
	}
	var batch []*submission
	size := 1 // "[" and "]" less the first item's comma
	n := 0
	for n < len(q.items) && len(batch) < s.cfg.MaxBatch {
		it := q.items[n]
		if !it.canceled {
			if len(batch) > 0 && size+len(it.body)+1 > s.cfg.MaxBytes {
				break
			}
			size += len(it.body) + 1
			it.sent = true
			batch = append(batch, it)
			q.live--
			q.bytes -= len(it.body)
		}
		n++
	}
	clear(q.items[:n])
	q.items = q.items[n:]
	if len(q.items) == 0 {
		delete(s.queues, q.task)
	}
	return q.task, batch
}

// trim drops the cancelled submissions at the head of q.
func (q *submitQueue) trim() {
	n := 0
	for n < len(q.items) && q.items[n].canceled {
		n++
	}
	if n > 0 {
		clear(q.items[:n])
		q.items = q.items[n:]
	}
}

// send submits batch to task and answers each caller. A submission the
// server refuses by its array index fails alone and the others are sent
// again, as a new request.
func (s *Submitter) send(task string, batch []*submission) {
	n := len(batch)
	for len(batch) > 0 {
		res, err := s.post(task, batch)
		if n > 0 {
			s.answering(task, n)
			n = 0
		}
		if err == nil {
			for i, it := range batch {
				it.done <- submitOutcome{s: &res.Instances[i]}
			}
			return
		}
		if i, ierr := itemError(err, len(batch)); ierr != nil {
			batch[i].done <- submitOutcome{err: ierr}
			batch = append(batch[:i:i], batch[i+1:]...)
			continue
		}
		for _, it := range batch {
			it.done <- submitOutcome{err: err}
		}
		return
	}
}

// answering notes, before any of them is answered, that n callers of
// task will be: those who submit again make the next batch, which
// leaves as soon as as many have come back (see SubmitterConfig.Linger).
func (s *Submitter) answering(task string, n int) {
	s.mu.Lock()
	if len(s.answered) >= maxRemembered {
		clear(s.answered)
	}
	s.answered[task] = n
	s.mu.Unlock()
}

// maxRemembered bounds the tasks whose last batch size a Submitter keeps.
const maxRemembered = 4096

// post sends one array submission with a fresh Idempotency-Key, which
// the Client keeps through its retries.
func (s *Submitter) post(task string, batch []*submission) (*model.SubmitResult, error) {
	size := 1
	for _, it := range batch {
		size += len(it.body) + 1
	}
	body := make([]byte, 0, size)
	body = append(body, '[')
	for i, it := range batch {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, it.body...)
	}
	body = append(body, ']')
	var res model.SubmitResult
	err := s.c.Do(context.Background(), Request{Method: http.MethodPost, Path: taskPath(task, "/submit"), Body: body,
		Header: http.Header{HeaderIdempotencyKey: {NewRequestID()}}}, &res)
	if err != nil {
		return nil, err
	}
	if len(res.Instances) != len(batch) {
		return nil, fmt.Errorf("client: submit of %d answered %d instances", len(batch), len(res.Instances))
	}
	return &res, nil
}

// itemError finds the array element an error names ("[3].at" from the
// API, "items[3].delay" from the state machine) among n, and returns its
// index and the error as a single submission would have had it (field
// "at"); a nil error when it names none.
func itemError(err error, n int) (int, error) {
	var me *model.Error
	if !errors.As(err, &me) {
		return 0, nil
	}
	f := strings.TrimPrefix(me.Field, "items")
	if !strings.HasPrefix(f, "[") {
		return 0, nil
	}
	end := strings.IndexByte(f, ']')
	if end < 0 {
		return 0, nil
	}
	i, perr := strconv.Atoi(f[1:end])
	if perr != nil || i < 0 || i >= n {
		return 0, nil
	}
	e := *me
	e.Field = strings.TrimPrefix(f[end+1:], ".")
	return i, &e
}
