//go:build linux

package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// fakeCluster is a stand-in for the agents: it leases its jobs on the
// first poll, and answers heartbeats and reports as a test says.
type fakeCluster struct {
	t     *testing.T
	srv   *httptest.Server
	jobs  []model.Job
	lease time.Duration

	protocol int           // the cluster's protocol in poll answers
	delay    time.Duration // the first poll's answer (with the jobs) waits this long
	more     [][]model.Job // jobs of later polls, one list each

	mu        sync.Mutex
	polled    time.Time // when the job was leased
	caps      *model.Capabilities
	beatsDown bool   // heartbeats answer 503
	beatsHang bool   // heartbeats get no answer
	stop      string // heartbeats tell the executor to stop every attempt for this reason
	reportsUp bool
	beats     int
	beatReqs  []model.HeartbeatRequest // the ones answered
	batches   [][]model.CompleteItem   // report requests, refused ones too
	keys      []string                 // their Idempotency-Keys
	refused   int                      // how many of them were answered 503
	reports   []model.CompleteItem
	reported  time.Time
}

// newFakeCluster leases one shell job per command, all on the first poll.
func newFakeCluster(t *testing.T, lease time.Duration, commands ...string) *fakeCluster {
	t.Helper()
	f := &fakeCluster{t: t, lease: lease, reportsUp: true}
	for i, command := range commands {
		id := model.FormatID(uint64(i+1) << 20)
		f.jobs = append(f.jobs, model.Job{InstanceID: id, ExecutionID: id + "-1", Task: "t", Attempt: 1,
			Action: model.Action{Type: model.ActionShell, Command: command}})
	}
	release := make(chan struct{})
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve(release)))
	t.Cleanup(func() { close(release); f.srv.Close() })
	return f
}

func (f *fakeCluster) serve(release chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		reply := func(v any) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(v)
		}
		unavailable := func() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"down"}}`))
		}
		switch r.URL.Path {
		case "/v1/executors/poll":
			var req model.PollRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			f.caps = req.Capabilities
			resp := model.PollResponse{Jobs: []model.Job{}, LeaseMs: f.lease.Milliseconds(), HeartbeatMs: (f.lease / 4).Milliseconds(),
				Protocol: f.protocol}
			if f.polled.IsZero() {
				f.polled = time.Now()
				resp.Jobs, resp.HeldMs = f.jobs, 1
				if f.delay > 0 {
					f.mu.Unlock()
					time.Sleep(f.delay) // the answer is late on its way
					f.mu.Lock()
				}
				reply(resp)
				return
			}
			if len(f.more) > 0 {
				resp.Jobs, resp.HeldMs, f.more = f.more[0], 1, f.more[1:]
				reply(resp)
				return
			}
			f.mu.Unlock()
			select { // a long poll with nothing to hand out
			case <-r.Context().Done():
			case <-release:
			case <-time.After(time.Duration(req.WaitMs) * time.Millisecond):
			}
			f.mu.Lock()
			reply(resp)
		case "/v1/executors/heartbeat":
			f.beats++
			if f.beatsHang {
				f.mu.Unlock()
				select {
				case <-r.Context().Done():
				case <-release:
				}
				f.mu.Lock()
				return
			}
			if f.beatsDown {
				unavailable()
				return
			}
			var req model.HeartbeatRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			f.beatReqs = append(f.beatReqs, req)
			resp := model.HeartbeatResponse{Stop: []model.StopAttempt{}}
			for _, ra := range req.Running {
				if f.stop != "" {
					resp.Stop = append(resp.Stop, model.StopAttempt{InstanceID: ra.InstanceID, Attempt: ra.Attempt, Reason: f.stop})
				}
			}
			reply(resp)
		case "/v1/attempts/complete":
			var items []model.CompleteItem
			_ = json.NewDecoder(r.Body).Decode(&items)
			f.batches = append(f.batches, items)
			f.keys = append(f.keys, r.Header.Get(client.HeaderIdempotencyKey))
			if !f.reportsUp {
				f.refused++
				unavailable()
				return
			}
			f.reports = append(f.reports, items...)
			f.reported = time.Now()
			out := []model.CompleteOutcome{}
			for _, it := range items {
				out = append(out, model.CompleteOutcome{ExecutionID: it.ExecutionID, State: "RETRYING"})
			}
			reply(out)
		default:
			http.NotFound(w, r)
		}
	}
}

// report waits for the job's report.
func (f *fakeCluster) report(within time.Duration) (r model.CompleteRequest, after time.Duration) {
	f.t.Helper()
	f.until(within, "a report", func() bool {
		if len(f.reports) == 0 {
			return false
		}
		r, after = f.reports[0].Report, f.reported.Sub(f.polled)
		return true
	})
	return r, after
}

func startWorker(t *testing.T, cfg Config) (w *Worker, cancel func(), done <-chan struct{}) {
	t.Helper()
	cfg.Name, cfg.Shell, cfg.PollWait = "w1", true, time.Second
	if cfg.KillGrace == 0 {
		cfg.KillGrace = 5 * time.Second
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ch := make(chan struct{})
	go func() { defer close(ch); _ = w.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Error("worker did not stop")
		}
	})
	return w, stop, ch
}

// pidOf waits for the pid file the test command writes.
func pidOf(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testkit.Eventually(t, 10*time.Second, func() error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err
	})
	return pid
}

// TestWorker_fencesAttemptWithoutLease: an executor that cannot renew a
// lease stops the attempt (SIGTERM at 3/4 of the lease, SIGKILL by its
// end) before the leader's expiry (lease plus half a lease), and reports
// it canceled and retryable; interrupted once the cluster speaks
// protocol 6, with how long it ran.
func TestWorker_fencesAttemptWithoutLease(t *testing.T) {
	for _, proto := range []int{5, 6} {
		t.Run(fmt.Sprintf("protocol %d", proto), func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pid")
			lease := 2 * time.Second
			f := newFakeCluster(t, lease, "trap '' TERM; echo $$ > "+pidfile+"; sleep 60")
			f.beatsDown, f.protocol = true, proto
			_, _, _ = startWorker(t, Config{Servers: []string{f.srv.URL}})
			pid := pidOf(t, pidfile)
			rep, after := f.report(10 * time.Second)
			if !rep.Canceled || !rep.Retryable || !strings.Contains(rep.Error, "stopped: lease lost: not renewed within 1.5s") {
				t.Fatalf("report %+v, want canceled and retryable, lease lost", rep)
			}
			if rep.Interrupted != (proto >= 6) || (rep.RanMs > 0) != (proto >= 6) {
				t.Fatalf("report %+v at protocol %d: interrupted and ranMs only from protocol 6", rep, proto)
			}
			if after < fenceAt(lease) || after >= lease+lease/2 {
				t.Errorf("attempt reported %s after its lease began, want in [3/4 lease, lease + lease/2) = [1.5s, 3s)", after)
			}
			if err := syscall.Kill(pid, 0); err == nil {
				t.Errorf("the attempt's shell %d still runs after its report", pid)
			}
		})
	}
}

// TestWorker_refusesAttemptsNotAbove: a job whose attempt number is not
// above every attempt of its instance the worker was handed (attempt 0,
// or one handed again) is not run; a higher one is.
func TestWorker_refusesAttemptsNotAbove(t *testing.T) {
	dir := t.TempDir()
	f := newFakeCluster(t, 10*time.Second, "echo $AX_ATTEMPT >> "+filepath.Join(dir, "ran"))
	job := func(attempt int) model.Job {
		j := f.jobs[0]
		j.Attempt, j.ExecutionID = attempt, j.InstanceID+"-"+strconv.Itoa(attempt)
		return j
	}
	f.more = [][]model.Job{{job(1)}, {job(0)}, {job(3)}}
	_, _, _ = startWorker(t, Config{Servers: []string{f.srv.URL}})
	f.until(20*time.Second, "reports of attempts 1 and 3", func() bool { return len(f.reports) >= 2 })
	time.Sleep(200 * time.Millisecond) // a wrongly run attempt would report by now
	f.mu.Lock()
	var got []string
	for _, r := range f.reports {
		got = append(got, r.ExecutionID)
	}
	f.mu.Unlock()
	want := []string{job(1).ExecutionID, job(3).ExecutionID}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("reports %v, want %v: attempt 1 handed again and attempt 0 refused", got, want)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "ran"))
	ran := strings.Fields(string(b))
	slices.Sort(ran)
	if !slices.Equal(ran, []string{"1", "3"}) {
		t.Fatalf("ran attempts %q, want 1 and 3", b)
	}
}

// TestWorker_renewsLateLeasesBeforeStarting: jobs whose poll answer
// arrives with less than half the lease left are started only once a
// heartbeat renewed them, and counted from it; if it fails they are not
// started at all.
func TestWorker_renewsLateLeasesBeforeStarting(t *testing.T) {
	t.Run("renewed", func(t *testing.T) {
		f := newFakeCluster(t, 2*time.Second, "echo ran")
		f.delay = 1200 * time.Millisecond // 0.8s of the 2s lease left
		f.protocol = 6
		_, _, _ = startWorker(t, Config{Servers: []string{f.srv.URL}})
		rep, _ := f.report(10 * time.Second)
		f.mu.Lock()
		defer f.mu.Unlock()
		if !rep.Success || len(f.beatReqs) == 0 || len(f.beatReqs[0].Running) != 1 || f.beatReqs[0].Running[0].InstanceID != f.jobs[0].InstanceID ||
			!f.beatReqs[0].Running[0].NotStarted {
			t.Fatalf("report %+v after heartbeats %+v; want a heartbeat renewing the job (not started), then success", rep, f.beatReqs)
		}
	})
	t.Run("not renewed", func(t *testing.T) {
		dir := t.TempDir()
		f := newFakeCluster(t, 2*time.Second, "echo ran > "+filepath.Join(dir, "ran"))
		f.delay, f.beatsDown = 1200*time.Millisecond, true
		_, _, _ = startWorker(t, Config{Servers: []string{f.srv.URL}})
		f.until(10*time.Second, "a failed heartbeat", func() bool { return f.beats > 0 })
		time.Sleep(time.Second) // a started job would have written and reported by now
		f.mu.Lock()
		n := len(f.reports)
		f.mu.Unlock()
		if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil || n != 0 {
			t.Fatalf("a job whose late lease could not be renewed ran (%d reports)", n)
		}
	})
}

// TestWorker_heartbeatFailsOver: heartbeats to a server that does not
// answer move to the next one within the lease, so the attempt keeps its
// lease and ends normally.
func TestWorker_heartbeatFailsOver(t *testing.T) {
	lease := time.Second
	f := newFakeCluster(t, lease, "sleep 2.5; echo done")
	f.beatsHang, f.reportsUp = true, false
	good := newFakeCluster(t, lease) // leases nothing
	_, _, _ = startWorker(t, Config{Servers: []string{f.srv.URL, good.srv.URL}})
	rep, _ := good.report(20 * time.Second)
	if !rep.Success || rep.Output != "done\n" {
		t.Fatalf("report %+v, want success: the lease was renewed through the second server", rep)
	}
	good.mu.Lock()
	beats := good.beats
	good.mu.Unlock()
	f.mu.Lock()
	caps := f.caps
	f.mu.Unlock()
	if beats < 3 {
		t.Errorf("second server got %d heartbeats, want the renewals", beats)
	}
	if caps == nil || !caps.Shell || caps.HTTP || len(caps.Handlers) != 0 {
		t.Errorf("poll declared capabilities %+v, want shell only", caps)
	}
}

// TestWorker_shutdownGrace: once Run's context ends, a running attempt
// may finish within ShutdownGrace; one that does not is stopped and
// reported retryable, and Run returns.
func TestWorker_shutdownGrace(t *testing.T) {
	tests := []struct {
		name        string
		command     string
		grace       time.Duration
		wantSuccess bool
		wantError   string
	}{
		{"finishes within the grace", "sleep 1; echo done", 10 * time.Second, true, ""},
		{"stopped after the grace", "sleep 60", 300 * time.Millisecond, false, "stopped: executor shutting down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "x")
			f := newFakeCluster(t, 2*time.Second, "echo started > "+marker+"; "+tt.command)
			_, stop, done := startWorker(t, Config{Servers: []string{f.srv.URL}, ShutdownGrace: tt.grace, KillGrace: 200 * time.Millisecond})
			// Stop once the command runs: the poll that leased it reaching
			// the cluster is not enough, its answer may still be on its way
			// (a worker stopped before it has the job runs nothing and
			// reports nothing, rightly).
			f.until(10*time.Second, "the command's start", func() bool { _, err := os.Stat(marker); return err == nil })
			// The promise is Run's bound (grace + 10s); how close to the
			// grace it returns is load, judged by no test.
			took := f.stopOnceLeased(stop, done, tt.grace+10*time.Second)
			rep, _ := f.report(10 * time.Second)
			if rep.Success != tt.wantSuccess || !strings.Contains(rep.Error, tt.wantError) || (!tt.wantSuccess && !rep.Retryable) {
				t.Fatalf("report %+v, want success %v, error %q, retryable", rep, tt.wantSuccess, tt.wantError)
			}
			t.Logf("Run returned %s after its context ended", took)
		})
	}
}

// TestWorker_shutdownWithClusterGone: reports that cannot be delivered do
// not hold Run past ShutdownGrace + 10s.
func TestWorker_shutdownWithClusterGone(t *testing.T) {
	f := newFakeCluster(t, 2*time.Second, "echo quick")
	f.reportsUp, f.beatsDown = false, true
	_, stop, done := startWorker(t, Config{Servers: []string{f.srv.URL}, ShutdownGrace: 100 * time.Millisecond})
	if took := f.stopOnceLeased(stop, done, 100*time.Millisecond+10*time.Second); took > 5*time.Second {
		t.Errorf("stopped %s after the context ended, want about 1.5 leases after the last renewal", took)
	}
}

// stopOnceLeased cancels the worker's context once the job is leased and
// returns how long Run took to return then, failing the test if it took
// more than bound.
func (f *fakeCluster) stopOnceLeased(stop func(), done <-chan struct{}, bound time.Duration) time.Duration {
	f.t.Helper()
	f.until(10*time.Second, "the worker's poll", func() bool { return !f.polled.IsZero() })
	start := time.Now()
	stop()
	select {
	case <-done:
	case <-time.After(bound):
		f.t.Fatalf("Run still running %s after its context ended", bound)
	}
	return time.Since(start)
}

// TestWorker_PollsWithoutCapabilitiesForAnOlderCluster: a cluster older
// than protocol 3 refuses the capabilities field; the worker polls again
// without it (and keeps doing so) instead of failing every poll.
func TestWorker_PollsWithoutCapabilitiesForAnOlderCluster(t *testing.T) {
	var mu sync.Mutex
	var withCaps, without int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/executors/poll" {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{}`))
			return
		}
		var body map[string]json.RawMessage
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if _, ok := body["capabilities"]; ok {
			withCaps++
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":"invalid_argument","field":"capabilities","message":"unknown field \"capabilities\""}}`))
			return
		}
		without++
		_, _ = w.Write([]byte(`{"jobs":[],"leaseMs":10000,"heartbeatMs":2500}`))
	}))
	defer srv.Close()
	wk, err := New(Config{Servers: []string{srv.URL}, Name: "old", Shell: true, PollWait: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	var w int
	testkit.Eventually(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if w = withCaps; without < 3 {
			return fmt.Errorf("polls: %d with capabilities, %d without; want the worker to poll without them", withCaps, without)
		}
		return nil
	})
	if w != 1 {
		t.Errorf("%d polls with capabilities, want the one refused", w)
	}
	cancel()
	<-done
}

// until polls cond, under f's lock, until it holds or within passes.
func (f *fakeCluster) until(within time.Duration, what string, cond func() bool) {
	f.t.Helper()
	testkit.Until(f.t, within, what, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return cond()
	})
}

// TestWorker_batchesReports: reports that queue while a batch is being
// delivered go together in the next request; a batch retried after a 503
// keeps its Idempotency-Key.
func TestWorker_batchesReports(t *testing.T) {
	f := newFakeCluster(t, 2*time.Second, "echo a", "echo b", "echo c")
	f.reportsUp = false
	w, _, _ := startWorker(t, Config{Servers: []string{f.srv.URL}, Capacity: 4})
	// The first batch is refused (and retried) while the other reports
	// queue behind it.
	var first int
	f.until(10*time.Second, "reports queued behind a refused batch", func() bool {
		if f.refused == 0 {
			return false
		}
		first = len(f.batches[0])
		return first+len(w.reports) == 3
	})
	f.mu.Lock()
	f.reportsUp = true
	refused := f.refused
	f.mu.Unlock()
	f.until(10*time.Second, "three reports", func() bool { return len(f.reports) == 3 })

	f.mu.Lock()
	defer f.mu.Unlock()
	accepted := f.batches[refused:]
	var sizes []int
	for _, b := range accepted {
		sizes = append(sizes, len(b))
	}
	want := []int{first}
	if first < 3 {
		want = append(want, 3-first)
	}
	if !slices.Equal(sizes, want) {
		t.Errorf("accepted report requests of %v reports, want %v: the first batch again, then all that queued in one", sizes, want)
	}
	for i := 1; i <= refused; i++ {
		if f.keys[i] != f.keys[0] {
			t.Errorf("try %d of the first batch has Idempotency-Key %q, want %q (the first try's)", i+1, f.keys[i], f.keys[0])
		}
	}
	if len(accepted) == 2 && f.keys[refused+1] == f.keys[0] {
		t.Errorf("the second batch reuses the first one's Idempotency-Key")
	}
	for _, r := range f.reports {
		if !r.Report.Success || r.Report.Executor != "w1" {
			t.Errorf("report %+v, want success from w1", r)
		}
	}
}

// TestWorker_renewsLeasesTogether: one heartbeat renews every running
// attempt and carries each one's new output; the output streamed so is
// the output the reports keep.
func TestWorker_renewsLeasesTogether(t *testing.T) {
	f := newFakeCluster(t, time.Second, "echo one; sleep 1.5", "echo two; sleep 1.5", "echo three; sleep 1.5")
	_, _, _ = startWorker(t, Config{Servers: []string{f.srv.URL}, Capacity: 4})
	f.until(20*time.Second, "three reports", func() bool { return len(f.reports) == 3 })

	f.mu.Lock()
	defer f.mu.Unlock()
	streamed := map[string]string{}
	most := 0
	for _, hb := range f.beatReqs {
		seen := map[string]bool{}
		for _, r := range hb.Running {
			if seen[r.InstanceID] {
				t.Errorf("heartbeat names %s twice: %+v", r.InstanceID, hb)
			}
			seen[r.InstanceID] = true
			streamed[r.InstanceID] += r.Output
		}
		most = max(most, len(hb.Running))
	}
	if most != 3 {
		t.Errorf("%d heartbeats, the largest renewing %d attempts; want one renewing all three", len(f.beatReqs), most)
	}
	for _, r := range f.reports {
		id := strings.TrimSuffix(r.ExecutionID, "-1")
		if got := streamed[id]; got != r.Report.Output {
			t.Errorf("attempt %s: heartbeats streamed %q, report keeps %q; want the same", r.ExecutionID, got, r.Report.Output)
		}
	}
}

// TestWorker_rejectedApprovalSettles: an attempt whose mid-run approval
// was rejected (the heartbeat's stop says its instance is CANCELED) gets
// a moment to end on its own: `ax approval request` exits 1 and the
// script's rejection path runs, and its report carries its own exit and
// output. One that does not end is stopped after the settle; one that
// was terminated is stopped at once.
func TestWorker_rejectedApprovalSettles(t *testing.T) {
	// The first stop comes with the heartbeat a quarter lease (2s) in;
	// the settle is min(3s, lease/4) = 2s; the lease's fence is at 6s.
	lease := 8 * time.Second
	tests := []struct {
		name, reason, command string
		canceled              bool
		exit                  int
		output                string
		minAfter              time.Duration // from the lease
	}{
		{"rejected, ends on its own", "instance is CANCELED", "sleep 3; echo rejected-path; exit 1", false, 1, "rejected-path\n", 3 * time.Second},
		// Stopped after the settle, by the stop (not by the fence).
		{"rejected, goes on", "instance is CANCELED", "echo start; sleep 30", true, -1, "start\n", 4 * time.Second},
		// Stopped at once: it never reaches 3.5s.
		{"terminated", "instance is TERMINATED", "echo start; sleep 3.5; echo late", true, -1, "start\n", 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeCluster(t, lease, tt.command)
			f.stop = tt.reason
			_, _, _ = startWorker(t, Config{Servers: []string{f.srv.URL}, KillGrace: time.Second})
			rep, after := f.report(15 * time.Second)
			if rep.Canceled != tt.canceled || rep.ExitCode != tt.exit || rep.Output != tt.output {
				t.Fatalf("report %+v, want canceled %v, exit %d, output %q", rep, tt.canceled, tt.exit, tt.output)
			}
			if tt.canceled && !strings.Contains(rep.Error, "stopped: "+tt.reason) {
				t.Errorf("error %q, want the stop's reason", rep.Error)
			}
			if after < tt.minAfter {
				t.Errorf("reported %s after the lease, want at least %s", after, tt.minAfter)
			}
		})
	}
}

// TestWorker_batchesReportsWithinTheBodyLimit: reports that queue
// together are sent in batches whose body stays within the API's body
// limit (1 MiB): twelve attempts that each keep 64 KiB of output and a
// 60 KiB result are not one request of 1.5 MiB, which the cluster would
// refuse (413), losing the reports.
func TestWorker_batchesReportsWithinTheBodyLimit(t *testing.T) {
	cmd := `head -c 65536 /dev/zero | tr '\0' x; { printf '"'; head -c 61440 /dev/zero | tr '\0' y; printf '"'; } > "$AX_RESULT_FILE"`
	cmds := make([]string, 12)
	for i := range cmds {
		cmds[i] = cmd
	}
	f := newFakeCluster(t, 5*time.Second, cmds...)
	f.protocol = 8
	f.reportsUp = false
	w, _, _ := startWorker(t, Config{Servers: []string{f.srv.URL}, Capacity: 12})
	f.until(20*time.Second, "reports queued behind a refused batch", func() bool {
		return f.refused > 0 && len(f.batches[0])+len(w.reports) == 12
	})
	f.mu.Lock()
	f.reportsUp = true
	f.mu.Unlock()
	f.until(20*time.Second, "twelve reports", func() bool { return len(f.reports) == 12 })
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, b := range f.batches {
		body, _ := json.Marshal(b)
		if len(body) > 1<<20 {
			t.Errorf("report request %d: %d reports in %d bytes, over the API's 1 MiB", i, len(b), len(body))
		}
	}
	for _, r := range f.reports {
		if len(r.Report.Output) != 65536 || len(r.Report.Result) != 61442 {
			t.Fatalf("a report with %d bytes of output and %d of result, want 65536 and 61442", len(r.Report.Output), len(r.Report.Result))
		}
	}
}
