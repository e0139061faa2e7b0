// Package trigger computes fire times for ax's task triggers.
//
// It is pure and deterministic: nothing in it reads a clock, starts a
// goroutine or keeps state between calls. Callers pass the times, so every
// node of the cluster (and every test) computes the same fire times from the
// same inputs.
//
// A trigger is represented by a Schedule. ParseCron builds one from a cron
// expression and an IANA timezone, Interval from a fixed period and a start
// time, and Once from a single instant. Between and NextN list fire times
// for backfill, catch-up and "next runs" displays.
//
// # Daylight saving time
//
// Cron expressions are matched against the wall clock of the schedule's
// timezone, with one rule for the two kinds of DST transition:
//
//   - a wall-clock time that does not exist (the spring-forward gap) is
//     skipped: there is no run for it that day, and it is not moved to
//     another time;
//   - a wall-clock time that exists twice (the fall-back overlap) fires
//     once, at its first occurrence.
//
// The rule applies to every expression, not only to daily ones. In
// America/New_York on the fall-back day, "0 * * * *" fires at 01:00 EDT and
// not again at 01:00 EST, and "* * * * *" is silent for the repeated hour.
// On the spring-forward day, "0 * * * *" fires at 01:00 EST and then at 03:00
// EDT; the 02:00 run does not exist. Tasks that need a fixed real-time period
// should use @every or an interval trigger, which count elapsed time.
package trigger
