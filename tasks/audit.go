package tasks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ax-scheduler/ax/api/pages"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// DefaultAuditLimit is the page size of GET /v1/audit without ?limit=.
const DefaultAuditLimit = 50

// Pages answers the console pages' reads that no role's backend has
// (pages.Backend, api.Config.Pages): the audit and one attempt's output.
type Pages struct{ ts *Tasks }

var _ pages.Backend = (*Pages)(nil)

// NewPages returns the console pages' reads over ts.
func NewPages(ts *Tasks) *Pages { return &Pages{ts: ts} }

// Audit implements pages.Backend: every version the task history
// keeps, newest first (then by task, then version), filtered by task and
// actor, a page at a time; each with its definition and the one before.
func (p *Pages) Audit(ctx context.Context, f pages.AuditFilter) (*pages.AuditPage, error) {
	after, err := parseAuditCursor(f.Cursor)
	if err != nil {
		return nil, err
	}
	ts := p.ts
	refs, err := ts.state.AuditRefs(f.Task)
	if err != nil {
		return nil, err
	}
	if f.Actor != "" {
		refs = slices.DeleteFunc(refs, func(r fsm.AuditRef) bool { return r.Actor != f.Actor })
	}
	slices.SortFunc(refs, compareAudit)
	if after != nil {
		i, _ := slices.BinarySearchFunc(refs, *after, compareAudit)
		for i < len(refs) && compareAudit(refs[i], *after) <= 0 {
			i++
		}
		refs = refs[i:]
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	page := &pages.AuditPage{Entries: make([]pages.AuditEntry, 0, min(limit, len(refs)))}
	if len(refs) > limit {
		last := refs[limit-1]
		page.NextCursor = fmt.Sprintf("%d.%d.%s", last.Time.UnixMilli(), last.Version, last.Name)
		refs = refs[:limit]
	}
	for _, r := range refs {
		e := pages.AuditEntry{Task: r.Name, Version: r.Version, Op: r.Op, Actor: r.Actor, Time: r.Time}
		if e.Definition, err = ts.state.TaskVersionAt(r.Name, r.Version); err != nil {
			return nil, err
		}
		if r.Version > 1 {
			if e.Previous, err = ts.state.TaskVersionAt(r.Name, r.Version-1); err != nil {
				return nil, err
			}
		}
		page.Entries = append(page.Entries, e)
	}
	return page, nil
}

// compareAudit orders the audit: newest first, then by task, then the
// higher version first.
func compareAudit(a, b fsm.AuditRef) int {
	if c := b.Time.Compare(a.Time.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return cmp.Compare(b.Version, a.Version)
}

// parseAuditCursor reads "<unix ms>.<version>.<task>", the last entry of
// the page before (nil for none).
func parseAuditCursor(c string) (*fsm.AuditRef, error) {
	if c == "" {
		return nil, nil
	}
	bad := model.FieldErrorf("cursor", "not a cursor of GET /v1/audit: %q (pass nextCursor as it was answered)", c)
	parts := strings.SplitN(c, ".", 3)
	if len(parts) != 3 || parts[2] == "" {
		return nil, bad
	}
	ms, err1 := strconv.ParseInt(parts[0], 10, 64)
	v, err2 := strconv.ParseUint(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, bad
	}
	return &fsm.AuditRef{Name: parts[2], Version: v, Time: model.UnixMilli(ms)}, nil
}
