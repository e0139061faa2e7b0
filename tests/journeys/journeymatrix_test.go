package journeys

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestJourneyMatrix runs every user journey (journeys_test.go) in every
// deployment (deployments_test.go): one node with its embedded executor,
// three nodes addressed through a follower with an ax executor, three
// nodes with TLS and ACLs. A deployment is started once and shared by its
// journeys: those that stop nodes or executors run first, one at a time
// (the deployment is healed after each), then the others together. The
// deployments run side by side.
//
// Each step of a journey is a subtest, so a failure reads
// TestJourneyMatrix/DEPLOYMENT/JOURNEY/STEP, and the matrix's summary
// (logged at its end) names every failed cell as journey / deployment /
// step. AX_MATRIX_FULL=1 runs every journey three times in each
// deployment (fresh names each round) and the deployments one after the
// other; knownFailures lists the cells that fail because of a product bug
// not fixed yet.
func TestJourneyMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	full := os.Getenv("AX_MATRIX_FULL") != ""
	rounds := 1
	if full {
		rounds = 3
	}
	res := &matrixResults{cells: map[string]*cellResult{}}
	start := time.Now()
	t.Cleanup(func() { t.Logf("journey matrix, %s:\n%s", time.Since(start).Round(time.Second), res.summary()) })
	// Subtests run from goroutines rather than with t.Parallel: the
	// journeys mostly wait, and go test would run only -parallel
	// (GOMAXPROCS, 2 in CI) of them at a time across the whole matrix.
	var deps sync.WaitGroup
	for _, dk := range deploymentKinds {
		run := func() { t.Run(dk.name, func(t *testing.T) { runDeployment(t, dk, rounds, res) }) }
		if full {
			run()
			continue
		}
		deps.Go(run)
	}
	deps.Wait()
}

// runDeployment starts a deployment and runs every journey in it, rounds
// times: the journeys that stop nodes or executors one at a time, then
// the others together.
func runDeployment(t *testing.T, dk deploymentKind, rounds int, res *matrixResults) {
	began := time.Now()
	started := false
	defer func() {
		if !started {
			res.failAll(dk.name, "start the deployment")
		}
	}()
	d := dk.start(t)
	started = true
	t.Logf("%s started in %s", dk.name, time.Since(began).Round(time.Millisecond))
	for round := 1; round <= rounds; round++ {
		for _, j := range journeys {
			if j.alone {
				t.Run(j.name+roundSuffix(round), func(t *testing.T) { runCell(t, d, j, round, res) })
			}
		}
		var together sync.WaitGroup
		for _, j := range journeys {
			if !j.alone {
				together.Go(func() { t.Run(j.name+roundSuffix(round), func(t *testing.T) { runCell(t, d, j, round, res) }) })
			}
		}
		together.Wait()
	}
}

func roundSuffix(round int) string {
	if round == 1 {
		return ""
	}
	return fmt.Sprintf("-r%d", round)
}

// knownFailures are the cells, "DEPLOYMENT/JOURNEY", that fail because of
// a product bug not fixed yet, with what happens. Such a cell is skipped
// with that text and shown in the summary (AX_MATRIX_KNOWN=1 runs it
// anyway); it is never left out silently. Empty: every cell passes.
var knownFailures = map[string]string{}

// journey is a user journey written once against a deployment.
type journey struct {
	name string
	// alone: the journey stops nodes or executors, so it runs by itself
	// and leaves the deployment healed.
	alone bool
	run   func(c *cell)
}

// cell is a journey running in one deployment.
type cell struct {
	t       *testing.T
	d       *deployment
	ctx     context.Context
	journey string
	round   int
	res     *matrixResults
}

// step runs one step of the journey as a subtest named name; a step that
// fails ends the journey, and the cell records the step.
func (c *cell) step(name string, fn func(t *testing.T)) {
	c.t.Helper()
	if !c.t.Run(name, fn) {
		c.res.failed(c.d.name, c.journey, name)
		c.t.FailNow()
	}
}

// n is a name of the journey's own (a task, an executor), fresh in each
// round.
func (c *cell) n(base string) string { return base + roundSuffix(c.round) }

func runCell(t *testing.T, d *deployment, j journey, round int, res *matrixResults) {
	if why, ok := knownFailures[d.name+"/"+j.name]; ok && os.Getenv("AX_MATRIX_KNOWN") == "" {
		res.known(d.name, j.name, why)
		t.Skipf("KNOWN FAILURE: journey %s / deployment %s: %s (AX_MATRIX_KNOWN=1 runs it)", j.name, d.name, why)
	}
	start := time.Now()
	c := &cell{t: t, d: d, ctx: ctxT(t, 4*time.Minute), journey: j.name, round: round, res: res}
	t.Cleanup(func() { res.finished(d.name, j.name, t.Failed(), time.Since(start)) })
	j.run(c)
}

// matrixResults is what each cell did, for the summary.
type matrixResults struct {
	mu    sync.Mutex
	cells map[string]*cellResult // by "journey\x00deployment"
}

type cellResult struct {
	steps []string // the steps that failed
	known string
	fail  bool
	ran   time.Duration
	runs  int
}

func (r *matrixResults) cell(dep, journey string) *cellResult {
	k := journey + "\x00" + dep
	if r.cells[k] == nil {
		r.cells[k] = &cellResult{}
	}
	return r.cells[k]
}

func (r *matrixResults) failed(dep, journey, step string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cell(dep, journey)
	c.steps = append(c.steps, step)
}

func (r *matrixResults) failAll(dep, step string) {
	for _, j := range journeys {
		r.failed(dep, j.name, step)
		r.finished(dep, j.name, true, 0)
	}
}

func (r *matrixResults) known(dep, journey, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cell(dep, journey).known = why
}

func (r *matrixResults) finished(dep, journey string, failed bool, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cell(dep, journey)
	c.fail = c.fail || failed
	c.ran += took
	c.runs++
}

// summary is a table of journeys × deployments, then a line per failed
// or known-failing cell: journey / deployment / step.
func (r *matrixResults) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s", "journey")
	for _, dk := range deploymentKinds {
		fmt.Fprintf(&b, " %-20s", dk.name)
	}
	b.WriteString("\n")
	var notes []string
	for _, j := range journeys {
		fmt.Fprintf(&b, "%-22s", j.name)
		for _, dk := range deploymentKinds {
			c := r.cells[j.name+"\x00"+dk.name]
			mark := "not run"
			switch {
			case c == nil:
			case c.known != "":
				mark = "KNOWN FAILURE"
				notes = append(notes, fmt.Sprintf("KNOWN FAILURE journey %s / deployment %s: %s", j.name, dk.name, c.known))
			case c.fail:
				mark = "FAIL"
				step := "(outside a step)"
				if len(c.steps) > 0 {
					step = strings.Join(c.steps, ", ")
				}
				notes = append(notes, fmt.Sprintf("FAIL journey %s / deployment %s / step %s", j.name, dk.name, step))
			case c.runs > 0:
				mark = fmt.Sprintf("ok %s", (c.ran / time.Duration(c.runs)).Round(100*time.Millisecond))
			}
			fmt.Fprintf(&b, " %-20s", mark)
		}
		b.WriteString("\n")
	}
	sort.Strings(notes)
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	return b.String()
}
