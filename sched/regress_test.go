package sched

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/wheel"
)

// failingStore fails one of the reads Run starts with, optionally after
// blocking until release is closed.
type failingStore struct {
	Store
	scanErr, tasksErr error
	release           <-chan struct{}
}

func (s failingStore) ScanDue(fromMs, toMs int64, fn func(id uint64, dueMs int64)) error {
	if s.scanErr != nil {
		return s.scanErr
	}
	return s.Store.ScanDue(fromMs, toMs, fn)
}

func (s failingStore) TaskSchedulePage(after string, limit int, fn func(*fsm.TaskSchedule)) (string, error) {
	if s.release != nil {
		<-s.release
	}
	if s.tasksErr != nil {
		return "", s.tasksErr
	}
	return s.Store.TaskSchedulePage(after, limit, fn)
}

// runUntilReturn runs s until it returns by itself and returns its error.
func runUntilReturn(t *testing.T, ctx context.Context, s *Scheduler) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return done
}

func waitReturn(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(waitTimeout):
		t.Fatalf("Run did not return within %v", waitTimeout)
		return nil
	}
}

// TestScheduler_Run_StartupError: Run returns a failure to load the state
// (it used to wait for its goroutines before cancelling them, forever).
func TestScheduler_Run_StartupError(t *testing.T) {
	errBoom := errors.New("boom")
	cases := []struct {
		name  string
		store func(Store) Store
	}{
		{name: "scan due", store: func(s Store) Store { return failingStore{Store: s, scanErr: errBoom} }},
		{name: "task schedules", store: func(s Store) Store { return failingStore{Store: s, tasksErr: errBoom} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			s := New(Config{Clock: h.clock, Logger: h.log}, tc.store(h.fsm), h.propose)
			err := waitReturn(t, runUntilReturn(t, context.Background(), s))
			if !errors.Is(err, errBoom) {
				t.Errorf("Run() = %v, want an error wrapping %v", err, errBoom)
			}
		})
	}
}

// TestScheduler_Run_ReturnsWhileDriverBlocked: Run returns even when the
// wheel driver is stuck delivering expiries nobody reads any more (it used
// to block on the full channel forever, and Run waited for it).
func TestScheduler_Run_ReturnsWhileDriverBlocked(t *testing.T) {
	h := newHarness(t)
	release := make(chan struct{})
	errBoom := errors.New("boom")
	s := New(Config{Clock: h.clock, Logger: h.log},
		failingStore{Store: h.fsm, tasksErr: errBoom, release: release}, h.propose)
	for range cap(s.expired) {
		s.expired <- nil // a backlog Run has not read yet
	}
	s.driver.Add(1, at(time.Millisecond))
	done := runUntilReturn(t, context.Background(), s)

	// Run is stuck loading tasks; the driver arms its timer, fires and
	// blocks on the full channel.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := h.clock.BlockUntil(ctx, 1); err != nil {
		t.Fatalf("driver armed no timer: %v", err)
	}
	h.clock.Advance(time.Millisecond)
	h.waitFor("the driver to take the timer", func() bool { return s.driver.Len() == 0 })

	close(release) // Run fails to load tasks and returns
	if err := waitReturn(t, done); !errors.Is(err, errBoom) {
		t.Errorf("Run() = %v, want an error wrapping %v", err, errBoom)
	}
}

// TestScheduler_onExpired_Stale: an expiry handled after the task was
// rescheduled leaves the task with one timer, not two (it used to arm a
// second one and lose the handle of the first, which then outlived even
// the task's deletion).
func TestScheduler_onExpired_Stale(t *testing.T) {
	h := newHarness(t)
	h.putTask(cronTask("tick", "* * * * * *", "all"))
	s := New(Config{Clock: h.clock, Logger: h.log}, h.fsm, h.propose)
	ctx := context.Background()

	s.onChanged(ctx, "tick") // arms the timer for t0+1s
	if got := s.driver.Len(); got != 1 {
		t.Fatalf("after loading the task: %d timers, want 1", got)
	}
	// The driver delivered that timer's expiry; before Run handled it the
	// task changed and was rescheduled, which armed the timer again.
	s.onChanged(ctx, "tick")
	s.onExpired(ctx, []wheel.Expired{{ID: taskBit /* slot 0 */, Due: at(time.Second)}})
	if got := s.driver.Len(); got != 1 {
		t.Errorf("after a stale expiry: %d timers, want 1", got)
	}

	h.deleteTask("tick")
	s.onChanged(ctx, "tick")
	if got := s.driver.Len(); got != 0 {
		t.Errorf("after deleting the task: %d timers, want 0", got)
	}
}

// TestScheduler_proposeLoop_MaxBatch: fires queued while earlier ones were
// in flight are merged into commands of at most MaxBatch fires, in order
// (merging used to overshoot MaxBatch by up to one queued fire).
func TestScheduler_proposeLoop_MaxBatch(t *testing.T) {
	cases := []struct {
		name   string
		queued []int // sizes of the queued fires
		want   []int // sizes of the proposed commands
	}{
		{name: "merges small fires", queued: []int{1, 1, 1, 1, 1, 1}, want: []int{4, 2}},
		{name: "never exceeds MaxBatch", queued: []int{3, 3, 2, 4, 1, 1}, want: []int{3, 3, 2, 4, 2}},
		{name: "full fires alone", queued: []int{4, 4}, want: []int{4, 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			proposed := make(chan []uint64, 100)
			propose := func(c *command.Command) Future {
				var f command.Fire
				if err := json.Unmarshal(c.Body, &f); err != nil {
					t.Errorf("undecodable fire: %v", err)
				}
				proposed <- f.Instances
				return doneFuture{res: &fsm.Result{Data: json.RawMessage(`{}`)}}
			}
			s := New(Config{Clock: wheel.NewFakeClock(t0), MaxBatch: 4}, nil, propose)
			var all []uint64
			for _, n := range tc.queued {
				f := &command.Fire{}
				for range n {
					all = append(all, uint64(len(all)+1))
					f.Instances = append(f.Instances, all[len(all)-1])
				}
				s.fires <- f
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); s.proposeLoop(ctx) }()
			var sizes []int
			var ids []uint64
			deadline := time.After(waitTimeout)
			for len(ids) < len(all) {
				select {
				case c := <-proposed:
					sizes = append(sizes, len(c))
					ids = append(ids, c...)
				case <-deadline:
					t.Fatalf("proposed %d of %d fires within %v", len(ids), len(all), waitTimeout)
				}
			}
			cancel()
			<-done
			if !slices.Equal(sizes, tc.want) {
				t.Errorf("command sizes %v, want %v", sizes, tc.want)
			}
			if !slices.Equal(ids, all) {
				t.Errorf("fires proposed in order %v, want %v", ids, all)
			}
		})
	}
}
