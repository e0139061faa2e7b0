package scale

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/model/member"
)

// Print writes the result as Markdown tables: one row per step, then the
// leader kill, restart and join rows.
func (r *Result) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%d cron/interval tasks made in %s before the fill; %d executors (in-process SDK workers of package worker, capacity 1, a no-op handler; they run the tasks' and the probes' instances), the leader heard from %d\n",
		r.Tasks, r.TasksTook.Round(time.Millisecond), r.Executors, r.ExecutorsSeen)
	fmt.Fprintln(w, "Per node, in node order (* the leader; the term is the leader's after the step): fsm.db and the data directory on disk, VmRSS (RssAnon in brackets) from /proc/PID/status; the leader's latest finished Raft snapshot: its size and how long writing it took (its directory's name to its meta.json).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| pending | batched/s in the step | probe p50 | probe p99 | fsm.db MB | data dir MB | VmRSS MB (RssAnon) | snapshot MB, took | term |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	var term uint64
	for i, s := range r.Steps {
		elected := ""
		if i > 0 && s.Term != term {
			elected = " (an election)"
		}
		term = s.Term
		var state, disk, rss []string
		snap := "-"
		for _, n := range s.Nodes {
			mark := ""
			if n.Role == member.RoleLeader {
				mark = "*"
				if n.Snapshot.Index > 0 {
					snap = fmt.Sprintf("%s, %s", benchkit.MB(n.Snapshot.Size), n.Snapshot.Took.Round(10*time.Millisecond))
				}
				if n.Snapshot.Writing {
					snap += " (writing another)"
				}
			}
			state = append(state, benchkit.MB(n.State)+mark)
			disk = append(disk, benchkit.MB(n.Disk)+mark)
			rss = append(rss, fmt.Sprintf("%s (%s)%s", benchkit.MB(n.RSSKB<<10), benchkit.MB(n.AnonKB<<10), mark))
		}
		fmt.Fprintf(w, "| %d | %.0f | %s | %s | %s | %s | %s | %s | %d%s |\n", s.Pending, s.Rate(), s.ProbeP50, s.ProbeP99,
			strings.Join(state, " / "), strings.Join(disk, " / "), strings.Join(rss, " / "), snap, s.Term, elected)
	}
	f := r.Failover
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| event | time | memory |")
	fmt.Fprintln(w, "|---|---|---|")
	if f.Old != "" {
		fmt.Fprintf(w, "| leader %s kill -9 -> new leader %s | %s | |\n", f.Old, f.New, dur(f.Elected))
		fmt.Fprintf(w, "| kill -> every pending instance (%d) counted by the new leader | %s | |\n", f.Pending, dur(f.Visible))
		fmt.Fprintf(w, "| kill -> first fire (a timer due after the kill) | %s | |\n", dur(f.Fired))
	}
	for _, cu := range []struct {
		what string
		c    CatchUp
	}{{"restart of the killed %s", r.Restart}, {"restart of %s after a simulated machine crash (another boot id, its files evicted from the page cache)", r.Crash},
		{"join of a fresh %s", r.Join}} {
		if cu.c.Node == "" || cu.c.Took == 0 {
			continue // not started
		}
		snap := "no snapshot in its directory"
		if s := cu.c.Snapshot; s.Index > 0 {
			snap = fmt.Sprintf("its latest snapshot at index %d, %s MB", s.Index, benchkit.MB(s.Size))
		}
		fmt.Fprintf(w, "| %s -> caught up (applied index %d; %s) | %s | peak VmRSS %s MB (RssAnon %s), %s vs %s MB, %s |\n",
			fmt.Sprintf(cu.what, cu.c.Node), cu.c.Index, snap, dur(cu.c.Took), benchkit.MB(cu.c.PeakRSSKB<<10), benchkit.MB(cu.c.PeakAnonKB<<10),
			ratio(cu.c.PeakRSSKB, cu.c.RefRSSKB), benchkit.MB(cu.c.RefRSSKB<<10), cu.c.RefWhat)
	}
}

func dur(d time.Duration) string {
	if d >= 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// ratio is a/b as "2.1x", "-" when either is unknown.
func ratio(a, b int64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}
