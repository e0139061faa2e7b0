package command

import (
	"testing"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
)

// TestPutCalendarWindow_Validate: a valid definition passes (it was
// refused as invalid_argument "<nil>" when asModelError wrapped a nil
// error), an invalid one is refused naming its field.
func TestPutCalendarWindow_Validate(t *testing.T) {
	tests := []struct {
		name      string
		body      interface{ Validate(*Command) *model.Error }
		wantField string // "" for valid
	}{
		{"a valid calendar", &PutCalendar{Calendar: calendar.Calendar{Name: "us", Exclude: []string{"sat", "2026-12-25"}}}, ""},
		{"a bad date", &PutCalendar{Calendar: calendar.Calendar{Name: "us", Exclude: []string{"2026-02-30"}}}, "exclude[0]"},
		{"a valid window", &PutWindow{Window: calendar.Window{Name: "w", Ranges: []string{"2026-12-24/2026-12-26"}}}, ""},
		{"a window without a schedule", &PutWindow{Window: calendar.Window{Name: "w"}}, "cron"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.body.Validate(nil)
			switch {
			case tt.wantField == "" && err != nil:
				t.Fatalf("got %v, want nil", err)
			case tt.wantField != "" && (err == nil || err.Field != tt.wantField):
				t.Fatalf("got %v, want an error on %q", err, tt.wantField)
			}
		})
	}
}
