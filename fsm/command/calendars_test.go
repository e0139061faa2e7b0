package command

import (
	"testing"

	"github.com/ax-scheduler/ax/model/calendar"
)

// TestPutCalendar_Validate: a valid definition passes (a nil error was
// once answered as an invalid_argument "<nil>", refusing every put), an
// invalid one is refused naming its field.
func TestPutCalendar_Validate(t *testing.T) {
	tests := []struct {
		name  string
		body  Body
		field string // "" when valid
	}{
		{"calendar", &PutCalendar{Calendar: calendar.Calendar{Name: "holidays", Timezone: "Europe/Berlin", Exclude: []string{"sat", "2026-12-24/2026-12-26"}}}, ""},
		{"calendar bad date", &PutCalendar{Calendar: calendar.Calendar{Name: "holidays", Exclude: []string{"2026-13-01"}}}, "exclude[0]"},
		{"window", &PutWindow{Window: calendar.Window{Name: "freeze", Ranges: []string{"2026-12-24"}}}, ""},
		{"window without schedule", &PutWindow{Window: calendar.Window{Name: "freeze"}}, "cron"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.body.Validate(&Command{})
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("got %v, want nil", err)
			case tt.field != "" && (err == nil || err.Field != tt.field):
				t.Fatalf("got %v, want an error naming %s", err, tt.field)
			}
		})
	}
}
