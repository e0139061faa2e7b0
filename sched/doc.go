// Package sched is the leader's scheduler: for one leadership term it
// keeps every task's next fire time and every delayed instance due within
// the horizon in a timing wheel, and turns expiries into Fire commands
// proposed through Raft in log order.
//
// Exactly-once firing does not depend on the scheduler: the state machine
// ignores a fire at or before a task's watermark and a fire of an instance
// that is no longer SCHEDULED. The scheduler is therefore free to be
// conservative: whenever it is unsure (a task changed, a new term began)
// it recomputes from the state machine's watermark and may propose a fire
// twice, never zero times. See DESIGN.md.
package sched
