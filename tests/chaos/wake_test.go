package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/model"
)

// wakeEnv sets how many freeze-and-wake cycles TestStaleLeaderWake runs
// (0 or unset: the test is skipped; it is a soak, not part of go test).
const wakeEnv = "AX_CHAOS_WAKE"

// wakeCrons is how many tasks of TestStaleLeaderWake fire every second.
const wakeCrons = 4

// TestStaleLeaderWake moves leadership while every node takes submissions
// and crons fire, alternately by freezing the leader (SIGSTOP) for a
// second and by a transfer: the old leader, thawed or awake, goes on
// proposing while its successor's heartbeats arrive. hashicorp/raft answers heartbeats on the transport's
// goroutine, and one of a newer term could give the waking leader's
// proposals the new term, so that its log and state diverge from its
// peers' (hashicorp/raft#695; raftnode's heartbeat gate prevents it). The
// test fails if any node holds a different set of instances than another,
// or lacks an acknowledged one. AX_FAULT_RAFT_UNGATED=1 (the agents are
// built with -tags faults) turns the gate off, to measure what it
// prevents: docs/testing.md, Fault hooks.
func TestStaleLeaderWake(t *testing.T) {
	cycles, _ := strconv.Atoi(os.Getenv(wakeEnv))
	if cycles <= 0 {
		t.Skipf("a soak: %s=N runs N freeze-and-wake cycles", wakeEnv)
	}
	if os.Getenv("AX_CHAOS_STARVE") != "" {
		defer startHogs(t)()
	}
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cycles)*20*time.Second+5*time.Minute)
	defer cancel()
	w := &workload{e: e, nodes: e.c.Addrs(), hc: &http.Client{}}
	// The delayed submissions' task, and crons firing every second: a
	// leader that wakes fires the seconds it slept through at once,
	// proposals of its own racing its successor's heartbeats (the writers'
	// proposals wait for the one the group commit had in flight).
	tasks := []*model.Task{{Name: "wake", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}}}
	for i := range wakeCrons {
		tasks = append(tasks, &model.Task{Name: fmt.Sprintf("wake-cron-%d", i),
			Trigger: model.Trigger{Type: model.TriggerCron, Expression: "* * * * * *"},
			Action:  model.Action{Type: model.ActionShell, Command: "true"},
			Policy:  model.Policy{Catchup: "all", CatchupWindow: model.Duration(10 * time.Minute), MaxConcurrency: 50}})
	}
	for _, task := range tasks {
		err := localcluster.WaitFor(ctx, 30*time.Second, func() error {
			_, _, err := w.write(ctx, http.MethodPut, "/v1/tasks/"+task.Name, client.NewRequestID(), task)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	// Writers: four per node, each sending to its node only, so that a
	// frozen leader has requests waiting when it wakes.
	var mu sync.Mutex
	acked := map[string]string{} // instance id -> idempotency key
	var sent, failed int
	wctx, stopWriters := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range 4 * len(e.c.Nodes) {
		addr := e.c.Nodes[i%len(e.c.Nodes)].HTTPAddr
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; wctx.Err() == nil; n++ {
				key := fmt.Sprintf("w%d-%d", i, n)
				id, err := submitOnce(wctx, addr, key)
				mu.Lock()
				sent++
				if err != nil {
					failed++
				} else {
					acked[id] = key
				}
				mu.Unlock()
			}
		}()
	}

	for c := range cycles {
		lead, err := e.leader(ctx, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if c%2 == 1 {
			// A transfer: the old leader, awake, goes on proposing until
			// it learns it follows.
			to := e.follower(lead)
			tctx, tcancel := context.WithTimeout(ctx, 10*time.Second)
			err = e.inject(fmt.Sprintf("cycle %d: transfer %s → %s", c+1, lead.ID, to.ID), func() error { return lead.Client().Transfer(tctx, to.ID) },
				func() {}, func() error { return nil })
			tcancel()
			if err != nil {
				t.Logf("transfer: %v", err)
			}
		} else {
			err = e.inject(fmt.Sprintf("cycle %d: SIGSTOP leader %s", c+1, lead.ID), func() error { return lead.Signal(syscall.SIGSTOP) },
				holdFor(ctx, time.Second), func() error { return lead.Signal(syscall.SIGCONT) })
			if err != nil {
				t.Fatal(err)
			}
		}
		holdFor(ctx, 700*time.Millisecond)()
	}
	stopWriters()
	wg.Wait()
	// Pause the crons: the nodes are compared at one index.
	for _, task := range tasks[1:] {
		if _, _, err := w.write(ctx, http.MethodPost, "/v1/tasks/"+task.Name+"/pause", client.NewRequestID(), nil); err != nil {
			t.Fatalf("pause %s: %v", task.Name, err)
		}
	}

	lead, err := e.leader(ctx, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range e.c.Nodes {
		if err := e.caughtUp(ctx, n, 60*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, task := range tasks {
		names = append(names, task.Name)
	}
	sets := map[string]map[string]bool{}
	for _, n := range e.c.Nodes {
		var got []model.Instance
		err := localcluster.WaitFor(ctx, 30*time.Second, func() (err error) {
			got, err = listTasks(ctx, n.Client(), names...)
			return err
		})
		if err != nil {
			t.Fatalf("listing %s: %v", n.ID, err)
		}
		ids := map[string]bool{}
		for _, in := range got {
			ids[in.ID] = true
		}
		sets[n.ID] = ids
	}
	mu.Lock()
	t.Logf("%d cycles, %d leaderships, %d submissions sent, %d acknowledged, %d without an answer or refused; final leader %s",
		cycles, len(e.leaderships()), sent, len(acked), failed, lead.ID)
	for id, key := range acked {
		for node, ids := range sets {
			if !ids[id] {
				t.Errorf("acknowledged instance %s (key %s) missing on %s", id, key, node)
			}
		}
	}
	mu.Unlock()
	ref := sets[lead.ID]
	for node, ids := range sets {
		var only, lacks []string
		for id := range ids {
			if !ref[id] {
				only = append(only, id)
			}
		}
		for id := range ref {
			if !ids[id] {
				lacks = append(lacks, id)
			}
		}
		if len(only)+len(lacks) > 0 {
			sort.Strings(only)
			sort.Strings(lacks)
			t.Errorf("%s diverged from the leader %s: %d instances only it has (%s), %d it lacks (%s)",
				node, lead.ID, len(only), abbreviate(only, 5), len(lacks), abbreviate(lacks, 5))
		}
	}
}

// submitOnce sends one delayed submission (due in a day) to the node at
// addr and returns the instance it created.
func submitOnce(ctx context.Context, addr, key string) (string, error) {
	due := time.Now().Add(24 * time.Hour)
	body, _ := json.Marshal(model.SubmitRequest{At: &model.Time{Time: due}, IdempotencyKey: key})
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/tasks/wake/submit", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, raw)
	}
	var out model.SubmitResult
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Instances) != 1 {
		return "", fmt.Errorf("answer %s: %v", raw, err)
	}
	return out.Instances[0].ID, nil
}
