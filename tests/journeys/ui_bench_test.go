package journeys

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/worker"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat.
const clockTicks = 100

// cpuOf is the CPU time (user + system) the processes have used.
func cpuOf(pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces) in parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			k, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + k
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// browserPIDs lists the processes of the chromium chromedp started (their
// command lines name its temporary profile), of one --type (renderer,
// gpu-process, utility; "" for all).
func browserPIDs(kind ...string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || !strings.Contains(string(b), "chromedp-runner") {
			continue
		}
		if len(kind) > 0 && !strings.Contains(string(b), "--type="+kind[0]) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// BenchmarkUI_ConsoleCPU measures what an open console costs a cluster
// firing 1,000 instances a second (each run by an in-process SDK worker:
// three state changes, so 3,000 events a second on the stream): the CPU of
// the three agents with no console, with the console on the live
// instances list, and on the overview, in interleaved phases, and the
// browser's own CPU.
//
//	go test ./tests/journeys/ -run xxx -bench UI_ConsoleCPU -benchtime 1x -v
func BenchmarkUI_ConsoleCPU(b *testing.B) {
	for range b.N {
		consoleCPU(b)
	}
}

func consoleCPU(b *testing.B) {
	phase := 15 * time.Second
	order := []string{"closed", "instances", "overview", "closed", "instances", "overview"}
	if testing.Short() {
		b.Skip("multi-process benchmark")
	}
	br := newBrowser(b)
	br.noA11y = true // axe-core would add its own CPU to the figures
	c := startCluster(b, 3, withArgs("-lease", "5s"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl := c.Client()
	if _, err := cl.PutTask(ctx, &model.Task{Name: "load", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionSDK, Handler: "noop"}, Policy: model.Policy{MaxConcurrency: 1_000_000}}); err != nil {
		b.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	w, err := worker.New(worker.Config{Servers: c.Addrs(), Name: "load", Capacity: 128,
		Handlers: map[string]worker.Handler{"noop": func(context.Context, worker.Job) error { return nil }}})
	if err != nil {
		b.Fatal(err)
	}
	go w.Run(wctx)

	// 1,000 a second for every phase, from 5 s on.
	total := int(phase/time.Millisecond)*len(order) + 10_000
	start := time.Now().Add(5 * time.Second)
	for done := 0; done < total; {
		n := min(10_000, total-done)
		reqs := make([]model.SubmitRequest, n)
		for i := range reqs {
			at := model.Time{Time: start.Add(time.Duration(done+i) * time.Millisecond)}
			reqs[i] = model.SubmitRequest{At: &at}
		}
		if _, err := cl.SubmitBatch(ctx, "load", reqs); err != nil {
			b.Fatal(err)
		}
		done += n
	}
	// The console talks to one follower; the other follower does the
	// same Raft work without it, so their difference in one phase is what
	// the console costs the node that serves it.
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	var followers []int
	var via string
	for _, n := range c.Nodes {
		if n == leader {
			continue
		}
		if via == "" {
			via = "http://" + n.HTTPAddr
		}
		followers = append(followers, n.PID())
	}
	time.Sleep(time.Until(start) + 2*time.Second) // firing has settled
	pages := map[string]string{"closed": "about:blank", "instances": via + "/ui/#/instances", "overview": via + "/ui/#/"}
	ready := map[string]string{"closed": "body", "instances": "#live.on", "overview": `[data-count="READY"]`}
	type sample struct{ serving, other, browser float64 }
	sum := map[string]sample{}
	pct := func(d, el time.Duration) float64 { return 100 * d.Seconds() / el.Seconds() }
	for _, ph := range order {
		br.open(pages[ph], ready[ph])
		time.Sleep(time.Second)
		s0, o0, b0, t0 := cpuOf(followers[:1]), cpuOf(followers[1:]), cpuOf(browserPIDs()), time.Now()
		r0 := cpuOf(browserPIDs("renderer"))
		time.Sleep(phase)
		el := time.Since(t0)
		rend := pct(cpuOf(browserPIDs("renderer"))-r0, el)
		x := sample{pct(cpuOf(followers[:1])-s0, el), pct(cpuOf(followers[1:])-o0, el), pct(cpuOf(browserPIDs())-b0, el)}
		fmt.Printf("%-10s serving follower %5.1f%%, other follower %5.1f%% (difference %+5.1f), browser %5.1f%% (renderer %4.1f%%) of a core\n",
			ph, x.serving, x.other, x.serving-x.other, x.browser, rend)
		s := sum[ph]
		sum[ph] = sample{s.serving + x.serving/2, s.other + x.other/2, s.browser + x.browser/2}
	}
	stopWorker()
	for ph, s := range sum {
		b.ReportMetric(s.serving-s.other, "serving-extra-%cpu-"+ph)
		b.ReportMetric(s.browser, "browser-%cpu-"+ph)
	}
}
