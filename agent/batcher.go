package agent

import (
	"context"
	"fmt"
	"time"

	"ax/fsm"
	"ax/raftnode"
)

// Group commit: every write this node proposes as leader goes through one
// goroutine that packs whatever queued up while earlier proposals were in
// flight into a single Raft entry (a CmdBatch), lingering up to lingerFor
// for more while entries are in flight. An idle node proposes a lone
// command at once, so batching adds no latency when there is no load.

const (
	maxBatchCmds  = 1024
	maxBatchBytes = 4 << 20
	maxInFlight   = 16
	lingerFor     = time.Millisecond
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
	go func() {
		for f := range inflight {
			resp, err := f.fut.Wait()
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
		// While earlier entries are in flight, linger briefly so that
		// concurrent writers share one entry; an idle node proposes at once.
		var linger <-chan time.Time
		if len(inflight) > 0 {
			linger = time.After(lingerFor)
		}
	drain:
		for len(group) < maxBatchCmds && size < maxBatchBytes {
			select {
			case p := <-a.batchCh:
				group = append(group, p)
				size += len(p.cmd.Body)
				continue
			default:
			}
			if linger == nil {
				break
			}
			select {
			case p := <-a.batchCh:
				group = append(group, p)
				size += len(p.cmd.Body)
			case <-linger:
				break drain
			}
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
