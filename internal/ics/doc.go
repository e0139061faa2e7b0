// Package ics turns an iCalendar file (RFC 5545, .ics), such as a public
// holiday feed exported from Google Calendar or Outlook, into the
// exclusion list of an ax calendar: the dates the file's events cover,
// as "2026-12-25" for one day and "2026-12-24/2026-12-26" for
// consecutive days (inclusive both ends). `ax calendar import NAME
// FILE.ics` reads the file on the client, converts it with Parse and
// PUTs the calendar.
//
// The file is read by github.com/emersion/go-ical and recurrences are
// expanded by github.com/teambition/rrule-go; this package only decides
// which dates an event covers:
//
//   - Each VEVENT excludes the local dates it covers. An all-day event
//     (DTSTART;VALUE=DATE) covers DTSTART up to but not including DTEND;
//     without DTEND it covers DTSTART plus DURATION (in whole days), or
//     one day. Its dates are the same in every zone.
//   - A timed event covers every date its [start, end) touches in the
//     result's zone: an event ending exactly at midnight does not cover
//     the next day, and one without DTEND or DURATION covers the date it
//     starts on. DTEND is an exact end; DURATION's days and weeks are
//     nominal (the same wall time n days later, across DST), its hours,
//     minutes and seconds exact. DTSTART's TZID must be an IANA zone name
//     (as Google's exports write); VTIMEZONE definitions are not read.
//   - The result's zone is Options.Location, else the calendar's
//     X-WR-TIMEZONE, else UTC. Floating times (no TZID, no Z) are read in
//     that zone too.
//   - RRULE, RDATE and EXDATE are expanded within [From, To) only; DTSTART
//     is always an occurrence (unless an EXDATE removes it). A VEVENT with
//     a RECURRENCE-ID replaces that occurrence of the event with the same
//     UID: the occurrence is dropped and the override event counts on its
//     own (or not at all when cancelled).
//   - Only dates whose day (in the result's zone) overlaps [From, To) are
//     listed.
//   - An event with STATUS:CANCELLED is skipped and noted in
//     Result.Skipped. TRANSP:TRANSPARENT events are kept: public holiday
//     feeds mark their holidays transparent (they do not make anyone
//     busy). Components other than VEVENT and VTIMEZONE are noted and
//     ignored.
//   - Dates are sorted, duplicates removed, consecutive dates merged into
//     ranges.
//   - Bad input is an error naming the event (its SUMMARY, else its UID,
//     else its position) and why: not an iCalendar file, no DTSTART, a
//     zone that cannot be loaded, an RRULE that does not parse, an end
//     before the start.
//   - Work is bounded: more than MaxDates dates listed, or more than
//     MaxSteps occurrences and covered days visited, is an error naming
//     the bound, so a daily RRULE over a century cannot run away.
package ics
