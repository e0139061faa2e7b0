package replica

import (
	"context"
	"fmt"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/raftnode"
)

// Group commit: every write this node proposes as leader goes through one
// goroutine of its term that packs whatever queued up while its earlier
// proposal was in flight into a single Raft entry (a CmdBatch). An idle
// node proposes a lone command at once, so batching adds no latency when
// there is no load.
//
// The group commit is a service of the term: it lives and dies with it.
// When the term ends, a command still queued (not proposed) is answered
// raftnode.ErrNotLeader, which the caller may retry at the next leader
// (nothing was proposed), and the term's end waits until every proposal
// it made has its outcome: nothing a revoked term queued is proposed
// after it.

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
	// queueLen is how many commands may wait for the loop.
	queueLen = 4096
)

type pendingCmd struct {
	cmd  *command.Command
	ids  int // instances the command may create (command.Command.Instances)
	done chan cmdOutcome
}

type cmdOutcome struct {
	res *fsm.Result
	err error
}

// future is a proposal in flight (*raftnode.ApplyFuture).
type future interface {
	Wait() (any, error)
}

type flight struct {
	fut   future
	group []*pendingCmd
}

// group is the commands of one entry.
type group struct {
	cmds  []*pendingCmd
	bytes int // of the commands' bodies
	ids   int // instances they may create
}

// fits reports whether p may join g: an entry holds at most maxBatchCmds
// commands, maxBatchBytes of bodies and fsm.MaxEntryInstances instances.
// An empty group takes any command.
func (g *group) fits(p *pendingCmd) bool {
	return len(g.cmds) == 0 || len(g.cmds) < maxBatchCmds && g.bytes+len(p.cmd.Body) <= maxBatchBytes &&
		g.ids+p.ids <= fsm.MaxEntryInstances()
}

func (g *group) add(p *pendingCmd) {
	g.cmds = append(g.cmds, p)
	g.bytes += len(p.cmd.Body)
	g.ids += p.ids
}

// refuse answers every command of g: the term ended before they were
// proposed.
func (g *group) refuse() {
	for _, p := range g.cmds {
		p.done <- cmdOutcome{err: errTermEnded}
	}
}

// errTermEnded answers a command the group commit did not propose
// because its term ended: the caller may try the next leader.
var errTermEnded = fmt.Errorf("%w: the leadership term ended before the command was proposed", raftnode.ErrNotLeader)

// batcher is one term's group commit.
type batcher struct {
	r       *Replica
	apply   func(data []byte) future // proposes an entry (Raft's ApplyAsync)
	queue   chan *pendingCmd
	stopped chan struct{} // closed once run has returned and every outcome is out
}

// newBatcher returns the group commit of a term; it proposes through
// apply.
func newBatcher[F future](r *Replica, apply func(data []byte) F) *batcher {
	return &batcher{r: r, apply: func(data []byte) future { return apply(data) },
		queue: make(chan *pendingCmd, queueLen), stopped: make(chan struct{})}
}

// run proposes the queued commands until ctx (the term) ends, then
// refuses what is still queued and waits for the outcomes of what it
// proposed.
func (b *batcher) run(ctx context.Context) error {
	inflight := make(chan flight, maxInFlight)
	slots := make(chan struct{}, maxInFlight)
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		for f := range inflight {
			resp, err := f.fut.Wait()
			<-slots
			for i, p := range f.group {
				p.done <- outcomeOf(resp, err, i)
			}
		}
	}()
	defer func() {
		close(inflight)
		<-delivered
		for {
			select {
			case p := <-b.queue:
				p.done <- cmdOutcome{err: errTermEnded}
			default:
				close(b.stopped)
				return
			}
		}
	}()
	var carry *pendingCmd // received, but did not fit the last group
	for {
		var g group
		if carry != nil {
			g.add(carry)
			carry = nil
		} else {
			select {
			case <-ctx.Done():
				return nil
			case p := <-b.queue:
				g.add(p)
			}
		}
		// Take whatever is queued; while every slot is in flight, keep
		// collecting until one frees (or a command does not fit).
		slot := false
	collect:
		for carry == nil {
			var p *pendingCmd
			select {
			case p = <-b.queue:
			default:
				select {
				case p = <-b.queue:
				case slots <- struct{}{}:
					slot = true
					break collect
				case <-ctx.Done():
					g.refuse()
					return nil
				}
			}
			if g.fits(p) {
				g.add(p)
			} else {
				carry = p
			}
		}
		if !slot {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				g.refuse()
				if carry != nil {
					carry.done <- cmdOutcome{err: errTermEnded}
				}
				return nil
			}
		}
		if ctx.Err() != nil {
			<-slots
			g.refuse()
			if carry != nil {
				carry.done <- cmdOutcome{err: errTermEnded}
			}
			return nil
		}
		now := b.r.stamper.stamp()
		var data []byte
		if len(g.cmds) == 1 {
			c := g.cmds[0].cmd
			c.Now, c.Node = now, b.r.cfg.NodeID
			data = c.Encode()
		} else {
			cmds := make([]*command.Command, len(g.cmds))
			for i, p := range g.cmds {
				cmds[i] = p.cmd
			}
			data = command.EncodeBatch(now, b.r.cfg.NodeID, cmds).Encode()
		}
		b.r.entries.Add(1)
		b.r.commands.Add(uint64(len(g.cmds)))
		inflight <- flight{fut: b.apply(data), group: g.cmds}
	}
}

func outcomeOf(resp any, err error, i int) cmdOutcome {
	if err != nil {
		return cmdOutcome{err: err}
	}
	switch r := resp.(type) {
	case *fsm.Result:
		// A lone command's result, or a batch that failed as a whole
		// (undecodable): the same answer for each.
		return cmdOutcome{res: r}
	case *fsm.BatchResult:
		if i < len(r.Results) {
			return cmdOutcome{res: r.Results[i]}
		}
	}
	return cmdOutcome{err: fmt.Errorf("replica: unexpected apply response %T", resp)}
}

// submit hands c to the group commit and waits for its result. A command
// the term ended before proposing is answered errTermEnded.
func (b *batcher) submit(ctx context.Context, c *command.Command) (*fsm.Result, error) {
	p := &pendingCmd{cmd: c, ids: c.Instances(), done: make(chan cmdOutcome, 1)}
	select {
	case b.queue <- p:
	case <-b.stopped:
		return nil, errTermEnded
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v", raftnode.ErrTimeout, ctx.Err())
	}
	select {
	case o := <-p.done:
		return o.res, o.err
	case <-b.stopped:
		// Queued after the loop's last look: never proposed (its outcome,
		// if it had one, would be out before stopped is closed).
		select {
		case o := <-p.done:
			return o.res, o.err
		default:
			return nil, errTermEnded
		}
	case <-ctx.Done():
		// The command may still commit; a retry with its request id is safe.
		return nil, fmt.Errorf("%w: %v", raftnode.ErrTimeout, ctx.Err())
	}
}
