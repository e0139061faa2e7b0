package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/model"
)

// Workload task names.
const (
	taskTick    = "tick"    // cron, every second, catchup all
	taskLong    = "long"    // triggered with idempotency keys; runs for seconds
	taskDelayed = "delayed" // delayed submissions due within the run
	taskQuick   = "quick"   // triggered with only a request id, replayed at the end
	taskSharded = "sharded" // triggered with idempotency keys; runs as shardCount shards
	taskPooled  = "pooled"  // triggered with idempotency keys; needs a slot of chaosPool
)

// chaosPool is the shared pool the pooled task's instances need a slot of.
const chaosPool = "chaos-pool"

// shardCount is how many shards an instance of the sharded task runs as.
const shardCount = 4

var workloadTasks = []string{taskTick, taskLong, taskDelayed, taskQuick, taskSharded, taskPooled}

// workload drives the cluster while faults happen and records every
// acknowledged write. Writes go to one node at a time with a short
// deadline each and move on to the next node, re-sending the same request
// id (Idempotency-Key), as a careful client does; a write none of them
// acknowledged is counted as unknown. They are plain HTTP requests, so
// that what a node answered is recorded as it was.
type workload struct {
	e       *env
	nodes   []string // the agents' HTTP addresses
	hc      *http.Client
	longFor time.Duration

	mu      sync.Mutex
	acks    []Ack
	unknown int
	refused int
	quick   []Ack // to replay
	created time.Time
	start   time.Time

	seq      atomic.Int64
	longOn   atomic.Bool
	cancel   context.CancelFunc
	loops    sync.WaitGroup
	inflight sync.WaitGroup
}

// newWorkload creates the workload's tasks; longFor is how long a run of
// the long task lasts.
func newWorkload(ctx context.Context, e *env, longFor time.Duration) (*workload, error) {
	w := &workload{e: e, longFor: longFor, nodes: e.c.Addrs(), hc: &http.Client{}}
	policy := model.Policy{MaxConcurrency: 50, MaxRetries: 3, RetryInterval: model.Duration(200 * time.Millisecond)}
	tick := policy
	tick.Catchup, tick.CatchupWindow = "all", model.Duration(10*time.Minute)
	ticks := int(longFor / (250 * time.Millisecond))
	sharded := policy
	sharded.Shards = shardCount
	pooled := policy
	pooled.Pool = chaosPool
	tasks := []*model.Task{
		{Name: taskTick, Trigger: model.Trigger{Type: model.TriggerCron, Expression: "* * * * * *"}, Action: w.action(2, "0.1"), Policy: tick},
		{Name: taskLong, Trigger: model.Trigger{Type: model.TriggerEvent}, Action: w.action(ticks, "0.25"), Policy: policy},
		{Name: taskDelayed, Trigger: model.Trigger{Type: model.TriggerEvent}, Action: w.action(2, "0.1"), Policy: policy},
		{Name: taskQuick, Trigger: model.Trigger{Type: model.TriggerEvent}, Action: w.action(1, "0.1"), Policy: policy},
		{Name: taskSharded, Trigger: model.Trigger{Type: model.TriggerEvent}, Action: w.action(ticks/2+1, "0.25"), Policy: sharded},
		{Name: taskPooled, Trigger: model.Trigger{Type: model.TriggerEvent}, Action: w.action(2, "0.1"), Policy: pooled},
	}
	// The pool first (protocol 8: the new cluster reaches it a moment
	// after its start), then event tasks: the cron's span starts when it
	// is acknowledged.
	err := localcluster.WaitFor(ctx, 30*time.Second, func() error {
		_, _, err := w.write(ctx, http.MethodPut, "/v1/pools/"+chaosPool, client.NewRequestID(), model.Pool{Slots: 2})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("put pool %s: %w", chaosPool, err)
	}
	for _, i := range []int{1, 2, 3, 4, 5, 0} {
		if _, _, err := w.write(ctx, http.MethodPut, "/v1/tasks/"+tasks[i].Name, client.NewRequestID(), tasks[i]); err != nil {
			return nil, fmt.Errorf("put task %s: %w", tasks[i].Name, err)
		}
	}
	w.created = time.Now()
	return w, nil
}

func (w *workload) action(ticks int, every string) model.Action {
	return model.Action{Type: model.ActionShell, Command: fmt.Sprintf("/bin/sh '%s' '%s' %d %s", w.e.script, w.e.logPath, ticks, every)}
}

// run starts the writers: a long trigger every second (every third one
// sent again with a fresh request id and the same key), a delayed
// submission due 3–6 s later every half second, a quick trigger every
// 700 ms.
func (w *workload) run() {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.start = time.Now()
	w.longOn.Store(true)
	w.every(ctx, time.Second, true, func(ctx context.Context, n int64) {
		key := fmt.Sprintf("l-%d", n)
		body := model.TriggerRequest{IdempotencyKey: key}
		if w.send(ctx, "trigger", taskLong, key, body, time.Time{}) && n%3 == 0 {
			w.send(ctx, "trigger", taskLong, key, body, time.Time{})
		}
	})
	w.every(ctx, 500*time.Millisecond, true, func(ctx context.Context, n int64) {
		// Due 3–6 s later: a write may spend seconds finding a node that
		// answers, and a time already past is refused.
		due := time.Now().Add(3*time.Second + rand.N(3*time.Second)).Truncate(time.Millisecond)
		key := fmt.Sprintf("d-%d", n)
		w.send(ctx, "submit", taskDelayed, key, model.SubmitRequest{At: &model.Time{Time: due}, IdempotencyKey: key}, due)
	})
	w.every(ctx, 700*time.Millisecond, false, func(ctx context.Context, n int64) {
		w.send(ctx, "trigger", taskQuick, "", model.TriggerRequest{}, time.Time{})
	})
	w.every(ctx, 2*time.Second, true, func(ctx context.Context, n int64) {
		key := fmt.Sprintf("s-%d", n)
		w.send(ctx, "trigger", taskSharded, key, model.TriggerRequest{IdempotencyKey: key}, time.Time{})
	})
	w.every(ctx, 1500*time.Millisecond, true, func(ctx context.Context, n int64) {
		key := fmt.Sprintf("p-%d", n)
		w.send(ctx, "trigger", taskPooled, key, model.TriggerRequest{IdempotencyKey: key}, time.Time{})
	})
}

// every calls f every period until ctx ends, each call in its own
// goroutine so that a write stuck on a cut node does not hold the others
// back; long marks writers that stopLong stops.
func (w *workload) every(ctx context.Context, period time.Duration, long bool, f func(context.Context, int64)) {
	w.loops.Add(1)
	go func() {
		defer w.loops.Done()
		tk := time.NewTicker(period)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			if long && !w.longOn.Load() {
				continue
			}
			n := w.seq.Add(1)
			w.inflight.Add(1)
			go func() { defer w.inflight.Done(); f(ctx, n) }()
		}
	}()
}

// stopLong stops the long triggers and the delayed submissions, so that
// the drain after the workload does not wait for fresh long runs.
func (w *workload) stopLong() { w.longOn.Store(false) }

// stop ends the writers and waits for the writes in flight; it returns
// when the workload ended.
func (w *workload) stop() time.Time {
	w.cancel()
	w.loops.Wait()
	w.inflight.Wait()
	return time.Now()
}

// send makes one write (a trigger or a submission of task with body) and
// records it: an acknowledgement with the instance it names, or an
// unknown outcome. It reports whether it was acknowledged.
func (w *workload) send(ctx context.Context, kind, task, key string, body any, due time.Time) bool {
	req := client.NewRequestID()
	id, note, err := w.create(ctx, kind, task, req, body)
	if err != nil {
		var me *model.Error
		refused := errors.As(err, &me) && me.Code != model.CodeUnavailable && me.Code != model.CodeInternal
		w.mu.Lock()
		defer w.mu.Unlock()
		if refused {
			w.refused++ // a definite answer: nothing was written
		} else {
			w.unknown++
		}
		if w.refused+w.unknown <= 5 {
			w.e.t.Logf("%s %s (key %q, request %s) at %s: %v", kind, task, key, req, clock(time.Now()), err)
		}
		return false
	}
	a := Ack{Kind: kind, Task: task, Key: key, Request: req, ID: id, Due: due, At: time.Now(), Note: note}
	w.mu.Lock()
	w.acks = append(w.acks, a)
	if task == taskQuick {
		w.quick = append(w.quick, a)
	}
	w.mu.Unlock()
	return true
}

// create sends a trigger or submit with request id req and returns the
// instance id the answer names; an answer that names none is returned as
// an empty id with what it said.
func (w *workload) create(ctx context.Context, kind, task, req string, body any) (id, note string, err error) {
	raw, hdr, err := w.write(ctx, http.MethodPost, "/v1/tasks/"+task+"/"+kind, req, body)
	if err != nil {
		return "", "", err
	}
	if kind == "submit" {
		var out model.SubmitResult
		if json.Unmarshal(raw, &out) == nil && len(out.Instances) == 1 {
			id = out.Instances[0].ID
		}
	} else {
		var out model.Submitted
		if json.Unmarshal(raw, &out) == nil {
			id = out.ID
		}
	}
	if id == "" {
		note = fmt.Sprintf("%s with headers %v and body %q", hdr.Get("X-Chaos-Status"), hdr, raw)
	}
	return id, note, nil
}

// write sends one request with request id req to the nodes in turn, 3 s
// per try, until one answers or 12 s have passed, and returns the answer's
// body and headers (X-Chaos-Status holds its status line). Only 503 or no
// answer moves on; any other error is final.
func (w *workload) write(ctx context.Context, method, path, req string, body any) ([]byte, http.Header, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 12*time.Second)
	defer cancel()
	first := rand.IntN(len(w.nodes))
	for try := 0; ; try++ {
		tctx, tcancel := context.WithTimeout(ctx, 3*time.Second)
		out, hdr, status, err := w.once(tctx, method, "http://"+w.nodes[(first+try)%len(w.nodes)]+path, req, data)
		tcancel()
		switch {
		case err == nil && status/100 == 2:
			return out, hdr, nil
		case err == nil && status != http.StatusServiceUnavailable:
			var eb model.ErrorBody
			if json.Unmarshal(out, &eb) == nil && eb.Error != nil {
				return nil, nil, eb.Error
			}
			return nil, nil, fmt.Errorf("%s %s: HTTP %d: %s", method, path, status, out)
		case err == nil:
			err = fmt.Errorf("%s %s: HTTP %d: %s", method, path, status, out)
		}
		if ctx.Err() != nil {
			return nil, nil, err
		}
		if try%len(w.nodes) == len(w.nodes)-1 {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond): // every node refused: give the election a moment
			}
		}
	}
}

// once sends one request and reads the whole answer.
func (w *workload) once(ctx context.Context, method, url, req string, data []byte) ([]byte, http.Header, int, error) {
	hr, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(data))
	if err != nil {
		return nil, nil, 0, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(client.HeaderIdempotencyKey, req)
	resp, err := w.hc.Do(hr)
	if err != nil {
		return nil, nil, 0, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, 0, err
	}
	resp.Header.Set("X-Chaos-Status", resp.Status)
	return out, resp.Header, resp.StatusCode, nil
}

// replay sends every acknowledged quick trigger again with its request
// id: each answer must name the instance the first one did (the answers
// are recorded as acknowledgements too; the checker compares them).
func (w *workload) replay(ctx context.Context) {
	w.mu.Lock()
	quick := append([]Ack(nil), w.quick...)
	w.mu.Unlock()
	for _, q := range quick {
		id, note, err := w.create(ctx, "trigger", taskQuick, q.Request, model.TriggerRequest{})
		if err != nil {
			w.e.t.Logf("replay of request %s: %v", q.Request, err)
			continue
		}
		w.mu.Lock()
		w.acks = append(w.acks, Ack{Kind: "trigger", Task: taskQuick, Request: q.Request, ID: id, At: time.Now(), Note: note})
		w.mu.Unlock()
	}
}

// warm waits until the cron and the long task have both started runs.
func (w *workload) warm(ctx context.Context, within time.Duration) error {
	return localcluster.WaitFor(ctx, within, func() error {
		started := map[string]int{}
		for _, r := range w.e.runs() {
			started[r.Task]++
		}
		if started[taskTick] >= 2 && started[taskLong] >= 1 {
			return nil
		}
		return fmt.Errorf("workload not running yet: runs started per task %v", started)
	})
}
