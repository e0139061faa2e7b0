package command

import (
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
)

// PutCalendar is the body of TypePutCalendar: an exclusion calendar's
// definition (protocol 8). IfVersion, when set, makes the put a
// compare-and-set: it is refused unless the stored calendar is at that
// version.
type PutCalendar struct {
	Calendar  calendar.Calendar `json:"calendar"`
	IfVersion uint64            `json:"ifVersion,omitempty"`
}

// Validate normalizes and checks the definition.
func (p *PutCalendar) Validate(*Command) *model.Error {
	p.Calendar = p.Calendar.Definition()
	p.Calendar.Normalize()
	if err := p.Calendar.Validate(); err != nil {
		return asModelError(err)
	}
	return nil
}

// PutWindow is the body of TypePutWindow: a blackout window's definition
// (protocol 8), with IfVersion as PutCalendar's.
type PutWindow struct {
	Window    calendar.Window `json:"window"`
	IfVersion uint64          `json:"ifVersion,omitempty"`
}

// Validate normalizes and checks the definition.
func (p *PutWindow) Validate(*Command) *model.Error {
	p.Window = p.Window.Definition()
	p.Window.Normalize()
	if err := p.Window.Validate(); err != nil {
		return asModelError(err)
	}
	return nil
}

// PutPool is the body of TypePutPool: a shared pool's definition
// (protocol 8; its counts are the state machine's).
type PutPool struct {
	Pool model.Pool `json:"pool"`
}

// Validate checks the definition.
func (p *PutPool) Validate(*Command) *model.Error {
	p.Pool = p.Pool.Definition()
	if err := p.Pool.Validate(); err != nil {
		return asModelError(err)
	}
	return nil
}
