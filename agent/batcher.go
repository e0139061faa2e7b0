package agent

import (
	"context"
	"fmt"

	"ax/fsm"
	"ax/raftnode"
)

// Group commit: every write this node proposes as leader goes through one
// goroutine that packs whatever queued up while its earlier proposal was in
// flight into a single Raft entry (a CmdBatch). An idle node proposes a
// lone command at once, so batching adds no latency when there is no load.

const (
	maxBatchCmds  = 1024
	maxBatchBytes = 4 << 20
	// maxInFlight entries of this loop may be uncommitted at once; the
	// next group collects meanwhile. One gives the largest groups: on the
	// reference 2-core machine, 64 single-submission clients ran at
	// 7,300-8,800/s with one, 6,900-8,100/s with two and 5,500-6,800/s
	// with sixteen, because every Raft round costs each replica about as
	// much CPU as 20-30 submissions. The scheduler's fires do not pass
	// through here.
	maxInFlight = 1
)

type pendingCmd struct {
	cmd  *fsm.Command
	done chan cmdOutcome
}

type cmdOutcome struct {
	res *fsm.Result
	err error
}

type flight struct {
	fut   *raftnode.ApplyFuture
	group []*pendingCmd
}

// batchLoop runs until the agent stops.
func (a *Agent) batchLoop() {
	defer a.wg.Done()
	inflight := make(chan flight, maxInFlight)
	slots := make(chan struct{}, maxInFlight)
	go func() {
		for f := range inflight {
			resp, err := f.fut.Wait()
			<-slots
			for i, p := range f.group {
				p.done <- outcomeOf(resp, err, i, len(f.group))
			}
		}
	}()
	defer close(inflight)
	for {
		var first *pendingCmd
		select {
		case <-a.stopCh:
			return
		case first = <-a.batchCh:
		}
		group := []*pendingCmd{first}
		size := len(first.cmd.Body)
		// Take whatever is queued; while every slot is in flight, keep
		// collecting until one frees (or the entry is full).
	drain:
		for len(group) < maxBatchCmds && size < maxBatchBytes {
			select {
			case p := <-a.batchCh:
				group = append(group, p)
				size += len(p.cmd.Body)
				continue
			default:
			}
			select {
			case p := <-a.batchCh:
				group = append(group, p)
				size += len(p.cmd.Body)
			case slots <- struct{}{}:
				break drain
			}
		}
		if len(group) >= maxBatchCmds || size >= maxBatchBytes {
			slots <- struct{}{}
		}
		now := a.now().UnixMilli()
		var data []byte
		if len(group) == 1 {
			first.cmd.Now, first.cmd.Node = now, a.cfg.NodeID
			data = first.cmd.Encode()
		} else {
			cmds := make([]*fsm.Command, len(group))
			for i, p := range group {
				cmds[i] = p.cmd
			}
			data = fsm.EncodeBatch(now, a.cfg.NodeID, cmds).Encode()
		}
		a.metrics.entries.Inc()
		a.metrics.commands.Add(float64(len(group)))
		inflight <- flight{fut: a.node.ApplyAsync(data), group: group}
	}
}

func outcomeOf(resp any, err error, i, n int) cmdOutcome {
	if err != nil {
		return cmdOutcome{err: err}
	}
	switch r := resp.(type) {
	case *fsm.Result:
		if n == 1 {
			return cmdOutcome{res: r}
		}
		// A batch that failed as a whole (undecodable) answers once.
		return cmdOutcome{res: r}
	case *fsm.BatchResult:
		if i < len(r.Results) {
			return cmdOutcome{res: r.Results[i]}
		}
	}
	return cmdOutcome{err: fmt.Errorf("agent: unexpected apply response %T", resp)}
}

// submitLocal hands c to the group-commit loop and waits for its result.
func (a *Agent) submitLocal(ctx context.Context, c *fsm.Command) (*fsm.Result, error) {
	p := &pendingCmd{cmd: c, done: make(chan cmdOutcome, 1)}
	select {
	case a.batchCh <- p:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v", raftnode.ErrTimeout, ctx.Err())
	}
	select {
	case o := <-p.done:
		return o.res, o.err
	case <-ctx.Done():
		// The command may still commit; a retry with its request id is safe.
		return nil, fmt.Errorf("%w: %v", raftnode.ErrTimeout, ctx.Err())
	}
}
