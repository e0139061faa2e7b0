package chaos

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// History is what one scenario recorded, all times on the test's clock
// (the machine's, which the action script's date also reads) except the
// instances' own stamps, which are the leader's.
type History struct {
	// Start and End bound the workload: writes were made in [Start, End).
	Start, End time.Time
	// Collected is when the final state was read (after the drain).
	Collected time.Time
	// Faults are the faults injected, in order.
	Faults []Fault
	// Acks are the writes the cluster acknowledged.
	Acks []Ack
	// Unknown counts writes whose outcome is unknown (an error answer or
	// no answer): they may or may not exist, but never twice.
	Unknown int
	// Refused counts writes refused with a definite answer (nothing
	// written), e.g. a submission whose time had passed by the time a
	// node answered.
	Refused int
	// Crons are the per-second cron tasks: every second in [From, To] must
	// have exactly one instance.
	Crons []Cron
	// Instances is the final state of every instance of the workload's
	// tasks, read linearizably; AttemptList is filled for those that had
	// more than one attempt or did not succeed.
	Instances []model.Instance
	// Replicas is, per node, the state of every instance it holds
	// (consistent reads on each node after the drain), by id.
	Replicas map[string]map[string]string
	// Runs are the attempts the action log saw.
	Runs []Run
	// Leaders are the leaderships the nodes reported (polled every
	// 250 ms), in the order first seen.
	Leaders []Leadership
	// Slots are, per workload task, its busy concurrency slots at the end
	// and the instances that held one then.
	Slots []SlotCount
	// Pools are the workload's pools' counts at the end.
	Pools []PoolCount
	// Launched are the attempts ("<instance>-<attempt>") an executor's own
	// log says it started ("attempt started"), with how it says each
	// ended ("" if its log has no end): an attempt killed at once (a late
	// fence) may die before its action wrote its start line.
	Launched map[string]string
}

// ParseLaunched reads an executor's log for the attempts it started and
// how they ended (ExecutorLog lines "attempt started: ... execution=X"
// and "attempt ended: ... execution=X ... error=...").
func ParseLaunched(r io.Reader, into map[string]string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		started := strings.Contains(line, "attempt started:")
		if !started && !strings.Contains(line, "attempt ended:") {
			continue
		}
		_, rest, ok := strings.Cut(line, " execution=")
		if !ok {
			continue
		}
		exec, _, _ := strings.Cut(rest, " ")
		if started {
			if _, seen := into[exec]; !seen {
				into[exec] = ""
			}
			continue
		}
		end := "ended"
		if _, e, ok := strings.Cut(line, " error="); ok && e != `""` {
			end = "ended: " + strings.Trim(e, `"`)
		}
		into[exec] = end
	}
	return sc.Err()
}

// SlotCount is a task's busy concurrency slots as the cluster counted
// them at the end (GET /v1/tasks/{name}/counts), and the task's instances
// that held one (READY, RUNNING, RETRYING, or waiting for a mid-run
// approval), listed between two counts that agreed with each other.
type SlotCount struct {
	Task    string
	Busy    int
	Holders []string
}

// PoolCount is a pool's busy and queued counts as the cluster kept them
// at the end (GET /v1/pools/{name}), and the workload task that uses it.
type PoolCount struct {
	Pool, Task   string
	Busy, Queued int
}

// Leadership is one leader's term, as first seen by the test.
type Leadership struct {
	Term   uint64
	Leader string
	Seen   time.Time
}

// LeaderChanged reports whether leadership moved during the history.
func (h *History) LeaderChanged() bool { return len(h.Leaders) > 1 }

// Fault is one fault injected, from Start until it was healed at End.
type Fault struct {
	Name       string
	Start, End time.Time
}

// Ack is one acknowledged write that created (or returned) an instance.
type Ack struct {
	Kind    string // "trigger" or "submit"
	Task    string
	Key     string // the body's idempotencyKey, "" if none
	Request string // the Idempotency-Key header it was sent with
	ID      string // the instance the answer named
	Due     time.Time
	At      time.Time // when the answer arrived
	Note    string    // what the answer said, when it named no instance
}

// Cron is a task firing every second from From to To.
type Cron struct {
	Task     string
	From, To time.Time
}

// Run is one attempt as the action log saw it: a process of the action
// script for (Instance, Attempt).
type Run struct {
	Instance string
	Attempt  int
	Task     string
	Executor string
	Start    time.Time
	// Last is the last time the process was seen alive: its end or stop
	// line, else its last tick (it was killed, or still runs).
	Last time.Time
	// Ended is "end" (ran to completion), "stop" (stopped by a signal)
	// or "" (no last word: killed with SIGKILL, or still running).
	Ended string
	// Starts counts start lines for this attempt: more than one means the
	// same attempt ran twice.
	Starts int
}

// ActionScript is the shell script every workload task runs: it appends
// start, tick, stop and end lines with the machine's time in Unix
// nanoseconds to the log file named by its first argument, ticking TICKS
// times every SECONDS (its other two arguments). A SIGTERM (how an
// executor stops an attempt) leaves a stop line; SIGKILL leaves nothing,
// and the last tick bounds when the process was last alive.
const ActionScript = `#!/bin/sh
log=$1; n=$2; d=$3
now() { date +%s%N; }
echo "start $AX_INSTANCE_ID $AX_ATTEMPT $(now) $AX_EXECUTOR $AX_TASK" >> "$log"
trap 'echo "stop $AX_INSTANCE_ID $AX_ATTEMPT $(now)" >> "$log"; exit 143' TERM INT HUP
i=0
while [ "$i" -lt "$n" ]; do
	sleep "$d" &
	wait $!
	echo "tick $AX_INSTANCE_ID $AX_ATTEMPT $(now)" >> "$log"
	i=$((i + 1))
done
echo "end $AX_INSTANCE_ID $AX_ATTEMPT $(now)" >> "$log"
`

// ParseRuns reads an action log. Lines it cannot parse are counted in
// bad and otherwise ignored (a line cut short by SIGKILL mid-write).
func ParseRuns(r io.Reader) (runs []Run, bad int, err error) {
	type key struct {
		id      string
		attempt int
	}
	byKey := map[key]*Run{}
	var order []key
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			bad++
			continue
		}
		attempt, err1 := strconv.Atoi(f[2])
		ns, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			bad++
			continue
		}
		at := time.Unix(0, ns)
		k := key{f[1], attempt}
		run := byKey[k]
		if run == nil {
			run = &Run{Instance: f[1], Attempt: attempt}
			byKey[k] = run
			order = append(order, k)
		}
		switch f[0] {
		case "start":
			run.Starts++
			if run.Start.IsZero() || at.Before(run.Start) {
				run.Start = at
			}
			if len(f) > 5 {
				run.Executor, run.Task = f[4], f[5]
			}
		case "tick":
		case "stop", "end":
			run.Ended = f[0]
		default:
			bad++
			continue
		}
		if at.After(run.Last) {
			run.Last = at
		}
	}
	for _, k := range order {
		runs = append(runs, *byKey[k])
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Start.Before(runs[j].Start) })
	return runs, bad, sc.Err()
}

// Terminal reports whether an instance state is final.
func Terminal(state string) bool {
	switch state {
	case model.StateSuccess, model.StateFailed, model.StateTerminated, model.StateSkipped, model.StateCanceled:
		return true
	}
	return false
}

// String renders a fault for the summary.
func (f Fault) String() string {
	return fmt.Sprintf("%s (%s)", f.Name, f.End.Sub(f.Start).Round(10*time.Millisecond))
}
