package sched

import (
	"slices"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/trigger"
)

// proto7 raises the harness's state machine to protocol 7 (trigger
// windows, maxRuns and jitter).
func (h *harness) proto7() {
	h.t.Helper()
	h.do(command.TypeSetProto, command.SetProto{Proto: 7})
}

// TestScheduler_Run_MaxRuns: a task fires exactly maxRuns times, across
// leader changes and two leaders at once, then is not armed; raising
// maxRuns makes it fire again.
func TestScheduler_Run_MaxRuns(t *testing.T) {
	t.Run("across a leader change", func(t *testing.T) {
		h := newHarness(t)
		h.proto7()
		tk := cronTask("tick", "* * * * * *", "all")
		tk.Trigger.MaxRuns = 3
		h.putTask(tk)
		_, stop := h.start(Config{})
		for i := 1; i <= 2; i++ {
			h.step(time.Second, at(secs(i)))
			h.waitInstances("tick", i)
		}
		h.settle(at(secs(3)))
		stop()
		h.advance(5 * time.Second) // t0+7s: four times missed, one run left
		s, stop := h.start(Config{})
		h.waitInstances("tick", 3)
		h.settle(time.Time{}) // nothing armed: the task completed
		for range 5 {
			h.step(time.Second, time.Time{})
		}
		h.settle(time.Time{})
		got := h.instances("tick")
		if want := seconds(1, 3); !slices.Equal(offsets(got), want) {
			t.Errorf("instances at %v, want %v", offsets(got), want)
		}
		if st := s.Stats(); st.WheelSize != 0 {
			t.Errorf("wheel size %d after maxRuns, want 0", st.WheelSize)
		}
		if tk, _ := h.fsm.GetTask("tick"); tk.Runs != 3 {
			t.Errorf("runs %d, want 3", tk.Runs)
		}

		// Raising maxRuns makes it fire again, from the change on.
		tk.Trigger.MaxRuns = 5
		h.putTask(tk) // at t0+12s
		for i := 13; i <= 16; i++ {
			next := at(secs(i))
			if i > 14 {
				next = time.Time{}
			}
			h.step(time.Second, next)
			h.waitInstances("tick", 3+min(i-12, 2))
		}
		h.settle(time.Time{})
		got = h.instances("tick")
		if want := append(seconds(1, 3), secs(13), secs(14)); !slices.Equal(offsets(got), want) {
			t.Errorf("after raising maxRuns: instances at %v, want %v", offsets(got), want)
		}
		stop()
	})
	t.Run("skipped fires do not count", func(t *testing.T) {
		// Overlap skip with the first instance holding the only slot:
		// every later fire is SKIPPED, which the state machine does not
		// count; the scheduler, which counted them as it proposed them,
		// rereads the count and keeps the task armed.
		h := newHarness(t)
		h.proto7()
		tk := cronTask("tick", "* * * * * *", "latest")
		tk.Trigger.MaxRuns = 2
		tk.Policy.MaxConcurrency, tk.Policy.Overlap = 1, "skip"
		h.putTask(tk)
		s, _ := h.start(Config{})
		for i := 1; i <= 4; i++ {
			h.step(time.Second, at(secs(i)))
			h.waitInstances("tick", i)
		}
		h.settle(at(secs(5)))
		got := h.instances("tick")
		for i, in := range got {
			if want := map[bool]string{true: model.StateReady, false: model.StateSkipped}[i == 0]; in.State != want {
				t.Errorf("instance at %s: %s, want %s", off(in.ScheduledAt.Time), in.State, want)
			}
		}
		if st := s.Stats(); st.WheelSize != 1 {
			t.Errorf("wheel size %d with a run left, want 1", st.WheelSize)
		}
		if tk, _ := h.fsm.GetTask("tick"); tk.Runs != 1 {
			t.Errorf("runs %d, want 1", tk.Runs)
		}
	})
	t.Run("two leaders at once", func(t *testing.T) {
		h := newHarness(t)
		h.proto7()
		tk := cronTask("tick", "* * * * * *", "latest")
		tk.Trigger.MaxRuns = 4
		h.putTask(tk)
		h.start(Config{})
		h.start(Config{})
		for i := 1; i <= 4; i++ {
			h.step(time.Second, at(secs(i)))
			h.waitInstances("tick", i)
		}
		for range 4 {
			h.step(time.Second, time.Time{})
		}
		h.settle(time.Time{})
		got := h.instances("tick")
		if want := seconds(1, 4); !slices.Equal(offsets(got), want) {
			t.Errorf("instances at %v, want %v", offsets(got), want)
		}
		checkFired(t, got)
	})
}

// TestScheduler_Run_Window: a task fires only within [startAt, endAt],
// catch-up included, and is not armed once its window has passed.
func TestScheduler_Run_Window(t *testing.T) {
	for _, catchup := range []string{"all", "latest"} {
		t.Run(catchup, func(t *testing.T) {
			h := newHarness(t)
			h.proto7()
			tk := cronTask("tick", "* * * * * *", catchup)
			start, end := model.Time{Time: at(secs(3))}, model.Time{Time: at(secs(8))}
			tk.Trigger.StartAt, tk.Trigger.EndAt = &start, &end
			h.putTask(tk)
			_, stop := h.start(Config{})
			for i := 1; i <= 4; i++ {
				next := at(secs(max(i, 3)))
				h.step(time.Second, next)
			}
			h.waitInstances("tick", 2) // t0+3s, t0+4s
			h.settle(at(secs(5)))
			stop()
			h.advance(10 * time.Second) // t0+14s: 5..8 missed, then the window ended
			_, stop = h.start(Config{})
			want := append(seconds(3, 4), seconds(5, 8)...)
			if catchup == "latest" {
				want = append(seconds(3, 4), secs(8))
			}
			h.waitInstances("tick", len(want))
			h.settle(time.Time{})
			for range 3 {
				h.step(time.Second, time.Time{})
			}
			h.settle(time.Time{})
			if got := h.instances("tick"); !slices.Equal(offsets(got), want) {
				t.Errorf("instances at %v, want %v", offsets(got), want)
			}
			stop()
		})
	}
}

// TestScheduler_Run_Jitter: each fire happens at its scheduled time moved
// by trigger.Jitter, under every leader alike; the instance keeps its
// nominal scheduled time (one instance per fire time) and says how it
// moved; it is on time against the moved time.
func TestScheduler_Run_Jitter(t *testing.T) {
	h := newHarness(t)
	h.proto7()
	tk := cronTask("tick", "*/10 * * * * *", "none") // "none": a late fire would be a misfire
	tk.Trigger.Jitter = model.Duration(9 * time.Second)
	h.putTask(tk)
	moved := func(n int) time.Time { // the n-th fire, at t0 + 10n s
		ft := at(secs(10 * n))
		return ft.Add(trigger.Jitter("tick", ft, ft.Add(10*time.Second), 9*time.Second))
	}
	_, stop := h.start(Config{})
	for n := 1; n <= 6; n++ {
		if n == 4 { // a new leader moves the fires alike
			h.settle(moved(n))
			stop()
			_, stop = h.start(Config{})
		}
		h.step(moved(n).Add(-time.Millisecond).Sub(h.clock.Now()), moved(n))
		h.settle(moved(n))
		if got := h.instances("tick"); len(got) != n-1 {
			t.Fatalf("fire %d: %d instances before its moved time %s", n, len(got), off(moved(n)))
		}
		h.step(time.Millisecond, moved(n))
		h.waitInstances("tick", n)
	}
	stop()
	got := h.instances("tick")
	for i, in := range got {
		n := i + 1
		if !in.ScheduledAt.Equal(at(secs(10*n))) || !in.FiredAt.Equal(moved(n)) {
			t.Errorf("fire %d: scheduled %s fired %s, want scheduled %s fired %s", n,
				off(in.ScheduledAt.Time), off(in.FiredAt.Time), off(at(secs(10*n))), off(moved(n)))
		}
		full := h.state(mustID(t, in.ID))
		want := "fire at " + in.ScheduledAt.Format(model.TimeLayout) + " moved +" + moved(n).Sub(in.ScheduledAt.Time).String() + " by jitter; late by 0s"
		if moved(n).Equal(in.ScheduledAt.Time) {
			want = "late by 0s" // a jitter of 0 is no move
		}
		if ev := firedEvent(full); ev != want {
			t.Errorf("fire %d: fired event %q, want %q", n, ev, want)
		}
	}
	if ev := h.misfires("tick"); len(ev) != 0 {
		t.Errorf("misfires %v, want none", ev)
	}
}

// TestScheduler_Run_JitterDST: a cron trigger with a jitter across the
// spring-forward change in New York and Berlin: every fire happens at
// its time moved by trigger.Jitter, and the fire before the gap, whose
// next fire comes an hour later instead of two, moves by less than that
// hour, so the fires keep their order. Shanghai has kept no DST since
// 1991 (the harness clock starts in 2030): its fires move alike with no
// shortened gap (trigger.TestJitter_DST covers its 1990 change).
func TestScheduler_Run_JitterDST(t *testing.T) {
	tests := []struct {
		zone    string
		from    time.Time // two days before the change
		wantGap bool
	}{
		{"America/New_York", time.Date(2030, 3, 8, 0, 0, 0, 0, time.UTC), true}, // springs forward 2030-03-10
		{"Europe/Berlin", time.Date(2030, 3, 29, 0, 0, 0, 0, time.UTC), true},   // 2030-03-31
		{"Asia/Shanghai", time.Date(2030, 3, 8, 0, 0, 0, 0, time.UTC), false},
	}
	for _, tt := range tests {
		t.Run(tt.zone, func(t *testing.T) {
			h := newHarness(t)
			h.proto7()
			h.advance(tt.from.Sub(h.clock.Now()))
			tk := cronTask("dst", "30 1,3 * * *", "none")
			tk.Trigger.Timezone, tk.Trigger.Jitter = tt.zone, model.Duration(90*time.Minute)
			h.putTask(tk)
			sc, err := tk.Schedule()
			if err != nil {
				t.Fatal(err)
			}
			_, stop := h.start(Config{})
			var want []time.Time
			for ft := sc.Next(h.clock.Now()); len(want) < 8; ft = sc.Next(ft) {
				m := ft.Add(trigger.Jitter("dst", ft, sc.Next(ft), 90*time.Minute))
				if len(want) > 0 && !m.After(want[len(want)-1]) || !m.Before(sc.Next(ft)) {
					t.Fatalf("fire %s moved to %s: out of order", ft, m)
				}
				h.step(m.Sub(h.clock.Now()), m)
				want = append(want, m)
				h.waitInstances("dst", len(want))
			}
			stop()
			got := h.instances("dst")
			gapDay := false
			for i, in := range got {
				if !in.FiredAt.Equal(want[i]) {
					t.Errorf("fire %s: fired %s, want %s", in.ScheduledAt.UTC(), in.FiredAt.UTC(), want[i].UTC())
				}
				if next := sc.Next(in.ScheduledAt.Time); next.Sub(in.ScheduledAt.Time) == time.Hour {
					gapDay = true
					if in.FiredAt.Sub(in.ScheduledAt.Time) >= time.Hour {
						t.Errorf("fire %s before the gap moved by %s", in.ScheduledAt.UTC(), in.FiredAt.Sub(in.ScheduledAt.Time))
					}
				}
			}
			if gapDay != tt.wantGap {
				t.Errorf("a fire an hour before the next: %v, want %v", gapDay, tt.wantGap)
			}
		})
	}
}

func mustID(t *testing.T, s string) uint64 {
	t.Helper()
	id, err := model.ParseID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// firedEvent returns the message of an instance's fired event.
func firedEvent(in *model.Instance) string {
	for _, e := range in.Events {
		if e.Type == "fired" {
			return e.Message
		}
	}
	return ""
}
