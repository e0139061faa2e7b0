package trigger

import "testing"

// 2025 transitions: America/New_York springs forward on March 9 at 02:00
// EST (to 03:00 EDT) and falls back on November 2 at 02:00 EDT (to 01:00
// EST); Europe/Berlin springs forward on March 30 at 02:00 CET (to 03:00
// CEST) and falls back on October 26 at 03:00 CEST (to 02:00 CET).

func TestCron_NextDSTNewYork(t *testing.T) {
	const ny = "America/New_York"
	runNextCases(t, []nextCase{
		{"spring daily 02:30 is skipped", "30 2 * * *", ny, "2025-03-08T00:00:00-05:00", 3,
			[]string{"2025-03-08T02:30:00-05:00", "2025-03-10T02:30:00-04:00", "2025-03-11T02:30:00-04:00"}},
		{"spring 6 fields 02:30:30 is skipped", "30 30 2 * * *", ny, "2025-03-08T12:00:00-05:00", 1,
			[]string{"2025-03-10T02:30:30-04:00"}},
		{"spring hourly skips 02:00", "0 * * * *", ny, "2025-03-09T00:30:00-05:00", 3,
			[]string{"2025-03-09T01:00:00-05:00", "2025-03-09T03:00:00-04:00", "2025-03-09T04:00:00-04:00"}},
		{"spring every minute", "* * * * *", ny, "2025-03-09T01:58:00-05:00", 3,
			[]string{"2025-03-09T01:59:00-05:00", "2025-03-09T03:00:00-04:00", "2025-03-09T03:01:00-04:00"}},
		{"spring every minute in the gap hour only", "* 2 * * *", ny, "2025-03-08T23:00:00-05:00", 1,
			[]string{"2025-03-10T02:00:00-04:00"}},
		{"fall daily 01:30 fires once", "30 1 * * *", ny, "2025-11-01T12:00:00-04:00", 2,
			[]string{"2025-11-02T01:30:00-04:00", "2025-11-03T01:30:00-05:00"}},
		{"fall daily 01:30 after its first occurrence", "30 1 * * *", ny, "2025-11-02T01:30:00-04:00", 1,
			[]string{"2025-11-03T01:30:00-05:00"}},
		{"fall daily 01:30 from the repeated hour", "30 1 * * *", ny, "2025-11-02T01:00:00-05:00", 1,
			[]string{"2025-11-03T01:30:00-05:00"}},
		{"fall daily 02:30", "30 2 * * *", ny, "2025-11-01T00:00:00-04:00", 3,
			[]string{"2025-11-01T02:30:00-04:00", "2025-11-02T02:30:00-05:00", "2025-11-03T02:30:00-05:00"}},
		{"fall hourly fires 01:00 once", "0 * * * *", ny, "2025-11-02T00:30:00-04:00", 3,
			[]string{"2025-11-02T01:00:00-04:00", "2025-11-02T02:00:00-05:00", "2025-11-02T03:00:00-05:00"}},
		{"fall hourly from the repeated hour", "0 * * * *", ny, "2025-11-02T01:30:00-05:00", 1,
			[]string{"2025-11-02T02:00:00-05:00"}},
		{"fall every minute skips the repeated hour", "* * * * *", ny, "2025-11-02T01:58:00-04:00", 3,
			[]string{"2025-11-02T01:59:00-04:00", "2025-11-02T02:00:00-05:00", "2025-11-02T02:01:00-05:00"}},
		{"fall every minute from the repeated hour", "* * * * *", ny, "2025-11-02T01:10:00-05:00", 1,
			[]string{"2025-11-02T02:00:00-05:00"}},
		{"fall every second at the end of the first 01:59", "* * * * * *", ny, "2025-11-02T01:59:58-04:00", 2,
			[]string{"2025-11-02T01:59:59-04:00", "2025-11-02T02:00:00-05:00"}},
	})
}

func TestCron_NextDSTBerlin(t *testing.T) {
	const berlin = "Europe/Berlin"
	runNextCases(t, []nextCase{
		{"spring daily 02:30 is skipped", "30 2 * * *", berlin, "2025-03-29T00:00:00+01:00", 3,
			[]string{"2025-03-29T02:30:00+01:00", "2025-03-31T02:30:00+02:00", "2025-04-01T02:30:00+02:00"}},
		{"spring hourly skips 02:00", "0 * * * *", berlin, "2025-03-30T00:30:00+01:00", 3,
			[]string{"2025-03-30T01:00:00+01:00", "2025-03-30T03:00:00+02:00", "2025-03-30T04:00:00+02:00"}},
		{"spring every minute", "* * * * *", berlin, "2025-03-30T01:58:00+01:00", 3,
			[]string{"2025-03-30T01:59:00+01:00", "2025-03-30T03:00:00+02:00", "2025-03-30T03:01:00+02:00"}},
		{"fall daily 02:30 fires at first occurrence", "30 2 * * *", berlin, "2025-10-25T00:00:00+02:00", 3,
			[]string{"2025-10-25T02:30:00+02:00", "2025-10-26T02:30:00+02:00", "2025-10-27T02:30:00+01:00"}},
		{"fall daily 02:30 from the repeated hour", "30 2 * * *", berlin, "2025-10-26T02:00:00+01:00", 1,
			[]string{"2025-10-27T02:30:00+01:00"}},
		{"fall hourly fires 02:00 once", "0 * * * *", berlin, "2025-10-26T01:30:00+02:00", 3,
			[]string{"2025-10-26T02:00:00+02:00", "2025-10-26T03:00:00+01:00", "2025-10-26T04:00:00+01:00"}},
		{"fall hourly from the repeated hour", "0 * * * *", berlin, "2025-10-26T02:30:00+01:00", 1,
			[]string{"2025-10-26T03:00:00+01:00"}},
		{"fall every minute skips the repeated hour", "* * * * *", berlin, "2025-10-26T02:58:00+02:00", 3,
			[]string{"2025-10-26T02:59:00+02:00", "2025-10-26T03:00:00+01:00", "2025-10-26T03:01:00+01:00"}},
	})
}

func TestCron_NextDSTOtherZones(t *testing.T) {
	runNextCases(t, []nextCase{
		// São Paulo sprang forward at midnight: 2018-11-04 00:00 did not exist.
		{"Sao Paulo midnight gap skipped", "0 0 * * *", "America/Sao_Paulo", "2018-11-03T12:00:00-03:00", 2,
			[]string{"2018-11-05T00:00:00-02:00", "2018-11-06T00:00:00-02:00"}},
		// It fell back at midnight: 2019-02-16 23:00-23:59 happened twice.
		{"Sao Paulo 23:30 fires once", "30 23 * * *", "America/Sao_Paulo", "2019-02-16T12:00:00-02:00", 2,
			[]string{"2019-02-16T23:30:00-02:00", "2019-02-17T23:30:00-03:00"}},
		// Lord Howe Island moves its clocks by 30 minutes.
		{"Lord Howe half-hour gap", "*/15 2 * * *", "Australia/Lord_Howe", "2025-10-04T12:00:00+10:30", 4,
			[]string{"2025-10-05T02:30:00+11:00", "2025-10-05T02:45:00+11:00", "2025-10-06T02:00:00+11:00", "2025-10-06T02:15:00+11:00"}},
		{"Lord Howe half-hour overlap", "*/15 1 * * *", "Australia/Lord_Howe", "2025-04-06T01:20:00+11:00", 4,
			[]string{"2025-04-06T01:30:00+11:00", "2025-04-06T01:45:00+11:00", "2025-04-07T01:00:00+10:30", "2025-04-07T01:15:00+10:30"}},
		// Samoa skipped 2011-12-30 entirely when it crossed the date line.
		{"Samoa skipped day", "0 12 * * *", "Pacific/Apia", "2011-12-29T00:00:00-10:00", 2,
			[]string{"2011-12-29T12:00:00-10:00", "2011-12-31T12:00:00+14:00"}},
		{"Samoa skipped day every minute", "* * * * *", "Pacific/Apia", "2011-12-29T23:58:00-10:00", 3,
			[]string{"2011-12-29T23:59:00-10:00", "2011-12-31T00:00:00+14:00", "2011-12-31T00:01:00+14:00"}},
	})
}
