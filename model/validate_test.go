package model_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// mustTime parses an RFC 3339 time or fails the test.
func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("parse time %q: %v", s, err)
	}
	return tm
}

// timePtr returns a pointer to the model.Time of an RFC 3339 string.
func timePtr(t *testing.T, s string) *model.Time {
	t.Helper()
	return &model.Time{Time: mustTime(t, s)}
}

// baseTask returns a valid cron/shell task that cases modify.
func baseTask() model.Task {
	return model.Task{
		Name:    "daily_report",
		Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 2 * * *", Timezone: "Asia/Shanghai"},
		Action:  model.Action{Type: model.ActionShell, Command: "python gen.py --date {{.Yesterday}}"},
	}
}

func dur(d time.Duration) model.Duration { return model.Duration(d) }

func TestTask_ValidateValid(t *testing.T) {
	tests := []struct {
		name   string
		modify func(t *testing.T, tk *model.Task)
	}{
		{"cron 5 fields in a timezone", func(t *testing.T, tk *model.Task) {}},
		{"cron 6 fields, default timezone", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerCron, Expression: "30 */5 * * * *"}
		}},
		{"cron descriptor", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerCron, Expression: "@daily", Timezone: "Europe/Berlin"}
		}},
		{"cron @every", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerCron, Expression: "@every 5m"}
		}},
		{"cron with names", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerCron, Expression: "0 9 * jan-mar mon-fri", Timezone: "UTC"}
		}},
		{"interval", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerInterval, Every: dur(time.Second)}
		}},
		{"interval with startAt", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerInterval, Every: dur(90 * time.Minute), StartAt: timePtr(t, "2026-01-01T00:15:00Z")}
		}},
		{"once at", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerOnce, At: timePtr(t, "2030-01-02T03:04:05.678Z")}
		}},
		{"cron with a window, maxRuns and jitter", func(t *testing.T, tk *model.Task) {
			tk.Trigger.StartAt, tk.Trigger.EndAt = timePtr(t, "2026-01-01T00:00:00Z"), timePtr(t, "2026-02-01T00:00:00+08:00")
			tk.Trigger.MaxRuns, tk.Trigger.Jitter = 3, dur(23*time.Hour)
		}},
		{"interval with an end, maxRuns and jitter", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerInterval, Every: dur(time.Minute), EndAt: timePtr(t, "2026-02-01T00:00:00Z"),
				MaxRuns: 10, Jitter: dur(59 * time.Second)}
		}},
		{"once with jitter", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerOnce, Delay: dur(time.Hour), Jitter: dur(48 * time.Hour)}
		}},
		{"once delay", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerOnce, Delay: dur(30 * time.Minute)}
		}},
		{"event", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerEvent}
		}},
		{"shell with env and workdir", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionShell, Command: "echo $X {{.Params.x}}", Env: map[string]model.Value{"X": {Text: "1"}, "_Y2": {Text: "2"}, "PW": {FromSecret: "db_password"}}, Workdir: "/tmp"}
		}},
		{"http with everything", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionHTTP, Method: "post", URL: "https://example.com/hook?d={{.Date}}",
				Headers: map[string]model.Value{"X-A": {Text: "b"}, "Authorization": {FromSecret: "api.token"}}, Body: `{"at":"{{.ScheduledAt}}"}`, Timeout: dur(10 * time.Second)}
		}},
		{"http plain URL", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionHTTP, URL: "http://10.0.0.1:8080/run"}
		}},
		{"sdk", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionSDK, Handler: "close-orders"}
		}},
		{"full policy", func(t *testing.T, tk *model.Task) {
			tk.Policy = model.Policy{MaxRetries: 100, RetryInterval: dur(5 * time.Minute), Backoff: "exponential",
				MaxRetryInterval: dur(time.Hour), RetryableExitCodes: []int{1, 255}, Timeout: model.Timeout(20 * time.Minute),
				MaxConcurrency: 10000, Overlap: "skip", Catchup: "all", CatchupWindow: dur(time.Hour), Approval: "before_run",
				IdempotencyKey: "{{.Task}}@{{.ScheduledAt}}", Notify: []string{"http://hooks.internal/ax", "https://x.example/y"},
				OnFailure: []string{"cleanup"}, DependsOn: []string{"extract", "load.v2"}, Retention: dur(720 * time.Hour)}
		}},
		{"catchup none, overlap queue, backoff fixed", func(t *testing.T, tk *model.Task) {
			tk.Policy = model.Policy{Catchup: "none", Overlap: "queue", Backoff: "fixed"}
		}},
		{"labels", func(t *testing.T, tk *model.Task) {
			tk.Labels = map[string]string{"env": "prod", "team/owner": "core", "a": strings.Repeat("v", 256)}
		}},
		{"128 character name", func(t *testing.T, tk *model.Task) { tk.Name = strings.Repeat("a", 128) }},
		{"name with dots, dashes, underscores", func(t *testing.T, tk *model.Task) { tk.Name = "0a.b-c_d" }},
		{"server fields are ignored", func(t *testing.T, tk *model.Task) {
			tk.Version = 9
			tk.UpdatedBy = "Not A Name"
			tk.NextFireTimes = []model.Time{{}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := baseTask()
			tt.modify(t, &tk)
			if err := tk.Validate(); err != nil {
				t.Fatalf("Validate: got %v, want nil", err)
			}
			// Normalizing a valid task keeps it valid.
			tk.Normalize()
			if err := tk.Validate(); err != nil {
				t.Errorf("Validate after Normalize: got %v, want nil", err)
			}
		})
	}
}

func TestTask_ValidateInvalid(t *testing.T) {
	tests := []struct {
		name      string
		modify    func(t *testing.T, tk *model.Task)
		wantField string
	}{
		{"empty name", func(t *testing.T, tk *model.Task) { tk.Name = "" }, "name"},
		{"uppercase name", func(t *testing.T, tk *model.Task) { tk.Name = "Daily" }, "name"},
		{"name of 129", func(t *testing.T, tk *model.Task) { tk.Name = strings.Repeat("a", 129) }, "name"},
		{"name starting with dash", func(t *testing.T, tk *model.Task) { tk.Name = "-daily" }, "name"},
		{"name with slash", func(t *testing.T, tk *model.Task) { tk.Name = "a/b" }, "name"},

		{"missing trigger type", func(t *testing.T, tk *model.Task) { tk.Trigger.Type = "" }, "trigger.type"},
		{"unknown trigger type", func(t *testing.T, tk *model.Task) { tk.Trigger.Type = "sometimes" }, "trigger.type"},
		{"cron without expression", func(t *testing.T, tk *model.Task) { tk.Trigger.Expression = "" }, "trigger.expression"},
		{"endAt before startAt", func(t *testing.T, tk *model.Task) {
			tk.Trigger.StartAt, tk.Trigger.EndAt = timePtr(t, "2026-02-01T00:00:00Z"), timePtr(t, "2026-01-01T00:00:00Z")
		}, "trigger.endAt"},
		{"endAt out of range", func(t *testing.T, tk *model.Task) { tk.Trigger.EndAt = timePtr(t, "0000-12-31T23:00:00Z") }, "trigger.endAt"},
		{"negative maxRuns", func(t *testing.T, tk *model.Task) { tk.Trigger.MaxRuns = -1 }, "trigger.maxRuns"},
		{"negative jitter", func(t *testing.T, tk *model.Task) { tk.Trigger.Jitter = dur(-time.Second) }, "trigger.jitter"},
		{"cron jitter not below the period", func(t *testing.T, tk *model.Task) { tk.Trigger.Jitter = dur(24 * time.Hour) }, "trigger.jitter"},
		{"interval jitter not below every", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerInterval, Every: dur(time.Minute), Jitter: dur(time.Minute)}
		}, "trigger.jitter"},
		{"maxRuns on a once trigger", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerOnce, Delay: dur(time.Hour), MaxRuns: 1}
		}, "trigger.maxRuns"},
		{"endAt on a once trigger", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerOnce, Delay: dur(time.Hour), EndAt: timePtr(t, "2030-01-01T00:00:00Z")}
		}, "trigger.endAt"},
		{"startAt on an event trigger", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerEvent, StartAt: timePtr(t, "2030-01-01T00:00:00Z")}
		}, "trigger.startAt"},
		{"jitter on an event trigger", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerEvent, Jitter: dur(time.Second)}
		}, "trigger.jitter"},
		{"cron minute 61", func(t *testing.T, tk *model.Task) { tk.Trigger.Expression = "61 2 * * *" }, "trigger.expression"},
		{"cron hour 24", func(t *testing.T, tk *model.Task) { tk.Trigger.Expression = "0 24 * * *" }, "trigger.expression"},
		{"cron 4 fields", func(t *testing.T, tk *model.Task) { tk.Trigger.Expression = "0 2 * *" }, "trigger.expression"},
		{"cron 7 fields", func(t *testing.T, tk *model.Task) { tk.Trigger.Expression = "0 0 2 * * * *" }, "trigger.expression"},
		{"cron CRON_TZ prefix", func(t *testing.T, tk *model.Task) { tk.Trigger.Expression = "CRON_TZ=UTC 0 2 * * *" }, "trigger.expression"},
		{"cron TZ prefix", func(t *testing.T, tk *model.Task) { tk.Trigger.Expression = "TZ=UTC 0 2 * * *" }, "trigger.expression"},
		{"cron unknown descriptor", func(t *testing.T, tk *model.Task) { tk.Trigger.Expression = "@fortnightly" }, "trigger.expression"},
		{"cron @every below 1s", func(t *testing.T, tk *model.Task) { tk.Trigger.Expression = "@every 500ms" }, "trigger.expression"},
		{"cron Feb 30 never fires", func(t *testing.T, tk *model.Task) { tk.Trigger.Expression = "0 0 30 2 *" }, "trigger.expression"},
		{"cron unknown timezone", func(t *testing.T, tk *model.Task) { tk.Trigger.Timezone = "Mars/Base" }, "trigger.timezone"},
		{"cron Local timezone", func(t *testing.T, tk *model.Task) { tk.Trigger.Timezone = "Local" }, "trigger.timezone"},
		{"cron with every", func(t *testing.T, tk *model.Task) { tk.Trigger.Every = dur(time.Minute) }, "trigger.every"},
		{"cron with at", func(t *testing.T, tk *model.Task) { tk.Trigger.At = timePtr(t, "2030-01-01T00:00:00Z") }, "trigger.at"},
		{"interval 500ms", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerInterval, Every: dur(500 * time.Millisecond)}
		}, "trigger.every"},
		{"interval without every", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerInterval}
		}, "trigger.every"},
		{"interval negative", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerInterval, Every: dur(-time.Minute)}
		}, "trigger.every"},
		{"interval with timezone", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerInterval, Every: dur(time.Minute), Timezone: "UTC"}
		}, "trigger.timezone"},
		{"once with at and delay", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerOnce, At: timePtr(t, "2030-01-01T00:00:00Z"), Delay: dur(time.Minute)}
		}, "trigger.delay"},
		{"once with neither", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerOnce}
		}, "trigger.at"},
		{"once negative delay", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerOnce, Delay: dur(-time.Minute)}
		}, "trigger.delay"},
		{"once with expression", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerOnce, Delay: dur(time.Minute), Expression: "* * * * *"}
		}, "trigger.expression"},
		{"event with startAt", func(t *testing.T, tk *model.Task) {
			tk.Trigger = model.Trigger{Type: model.TriggerEvent, StartAt: timePtr(t, "2030-01-01T00:00:00Z")}
		}, "trigger.startAt"},

		{"missing action type", func(t *testing.T, tk *model.Task) { tk.Action.Type = "" }, "action.type"},
		{"unknown action type", func(t *testing.T, tk *model.Task) { tk.Action.Type = "pigeon" }, "action.type"},
		{"shell without command", func(t *testing.T, tk *model.Task) { tk.Action.Command = "" }, "action.command"},
		{"shell blank command", func(t *testing.T, tk *model.Task) { tk.Action.Command = " \t\n" }, "action.command"},
		{"shell bad template", func(t *testing.T, tk *model.Task) { tk.Action.Command = "echo {{.Foo" }, "action.command"},
		{"shell bad env name", func(t *testing.T, tk *model.Task) { tk.Action.Env = map[string]model.Value{"1X": {Text: "v"}} }, "action.env.1X"},
		{"shell with url", func(t *testing.T, tk *model.Task) { tk.Action.URL = "http://x" }, "action"},
		{"http without url", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionHTTP}
		}, "action.url"},
		{"http relative url", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionHTTP, URL: "/hook"}
		}, "action.url"},
		{"http ftp url", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionHTTP, URL: "ftp://example.com/x"}
		}, "action.url"},
		{"http bad url template", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionHTTP, URL: "http://x/{{.Date"}
		}, "action.url"},
		{"http bad method", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionHTTP, URL: "http://x/", Method: "FETCH"}
		}, "action.method"},
		{"http bad body template", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionHTTP, URL: "http://x/", Body: "{{end}}"}
		}, "action.body"},
		{"http negative timeout", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionHTTP, URL: "http://x/", Timeout: dur(-time.Second)}
		}, "action.timeout"},
		{"http with command", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionHTTP, URL: "http://x/", Command: "echo"}
		}, "action"},
		{"sdk without handler", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionSDK}
		}, "action.handler"},
		{"sdk with command", func(t *testing.T, tk *model.Task) {
			tk.Action = model.Action{Type: model.ActionSDK, Handler: "h", Command: "echo"}
		}, "action"},

		{"maxRetries -1", func(t *testing.T, tk *model.Task) { tk.Policy.MaxRetries = -1 }, "policy.maxRetries"},
		{"maxRetries 101", func(t *testing.T, tk *model.Task) { tk.Policy.MaxRetries = 101 }, "policy.maxRetries"},
		{"negative retryInterval", func(t *testing.T, tk *model.Task) { tk.Policy.RetryInterval = dur(-time.Second) }, "policy.retryInterval"},
		{"negative maxRetryInterval", func(t *testing.T, tk *model.Task) { tk.Policy.MaxRetryInterval = dur(-time.Second) }, "policy.maxRetryInterval"},
		{"negative timeout", func(t *testing.T, tk *model.Task) { tk.Policy.Timeout = model.Timeout(-time.Second) }, "policy.timeout"},
		{"negative maxConcurrency", func(t *testing.T, tk *model.Task) { tk.Policy.MaxConcurrency = -1 }, "policy.maxConcurrency"},
		{"maxConcurrency 1000001", func(t *testing.T, tk *model.Task) { tk.Policy.MaxConcurrency = 1_000_001 }, "policy.maxConcurrency"},
		{"negative catchupWindow", func(t *testing.T, tk *model.Task) { tk.Policy.CatchupWindow = dur(-time.Second) }, "policy.catchupWindow"},
		{"negative retention", func(t *testing.T, tk *model.Task) { tk.Policy.Retention = dur(-time.Second) }, "policy.retention"},
		{"backoff bogus", func(t *testing.T, tk *model.Task) { tk.Policy.Backoff = "bogus" }, "policy.backoff"},
		{"overlap bogus", func(t *testing.T, tk *model.Task) { tk.Policy.Overlap = "bogus" }, "policy.overlap"},
		{"catchup bogus", func(t *testing.T, tk *model.Task) { tk.Policy.Catchup = "bogus" }, "policy.catchup"},
		{"approval bogus", func(t *testing.T, tk *model.Task) { tk.Policy.Approval = "after_run" }, "policy.approval"},
		{"exit code 0", func(t *testing.T, tk *model.Task) { tk.Policy.RetryableExitCodes = []int{1, 0} }, "policy.retryableExitCodes"},
		{"exit code 256", func(t *testing.T, tk *model.Task) { tk.Policy.RetryableExitCodes = []int{256} }, "policy.retryableExitCodes"},
		{"bad idempotencyKey template", func(t *testing.T, tk *model.Task) { tk.Policy.IdempotencyKey = "{{.Task" }, "policy.idempotencyKey"},
		{"idempotencyKey template that cannot expand", func(t *testing.T, tk *model.Task) { tk.Policy.IdempotencyKey = "{{.Task.Name}}-{{.Date}}" }, "policy.idempotencyKey"},
		{"idempotencyKey template that expands to nothing", func(t *testing.T, tk *model.Task) { tk.Policy.IdempotencyKey = "{{.Nope}}" }, "policy.idempotencyKey"},
		{"notify not a URL", func(t *testing.T, tk *model.Task) { tk.Policy.Notify = []string{"hooks.internal/ax"} }, "policy.notify"},
		{"notify mailto", func(t *testing.T, tk *model.Task) {
			tk.Policy.Notify = []string{"http://ok/", "mailto:ops@example.com"}
		}, "policy.notify"},
		{"onFailure bad name", func(t *testing.T, tk *model.Task) { tk.Policy.OnFailure = []string{"Cleanup"} }, "policy.onFailure"},
		{"dependsOn bad name", func(t *testing.T, tk *model.Task) { tk.Policy.DependsOn = []string{""} }, "policy.dependsOn"},

		{"bad label key", func(t *testing.T, tk *model.Task) { tk.Labels = map[string]string{"-env": "x"} }, "labels.-env"},
		{"label value too long", func(t *testing.T, tk *model.Task) { tk.Labels = map[string]string{"env": strings.Repeat("v", 257)} }, "labels.env"},
		{"too many labels", func(t *testing.T, tk *model.Task) {
			tk.Labels = map[string]string{}
			for i := range 65 {
				tk.Labels[strings.Repeat("k", i+1)] = "v"
			}
		}, "labels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := baseTask()
			tt.modify(t, &tk)
			err := tk.Validate()
			if err == nil {
				t.Fatalf("Validate: got nil, want an error for field %q", tt.wantField)
			}
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("Validate: got %T (%v), want *model.Error", err, err)
			}
			if me.Field != tt.wantField {
				t.Errorf("field: got %q, want %q (message %q)", me.Field, tt.wantField, me.Message)
			}
			if me.Code != model.CodeInvalid {
				t.Errorf("code: got %q, want %q", me.Code, model.CodeInvalid)
			}
			if me.Message == "" {
				t.Errorf("message: got empty, want an explanation")
			}
			if !errors.Is(err, model.ErrInvalid) {
				t.Errorf("errors.Is(err, ErrInvalid): got false, want true")
			}
		})
	}
}

func TestTask_ValidateCronMessageNamesField(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want string // substring of the message
	}{
		{"minute", "61 2 * * *", "minute"},
		{"hour", "0 25 * * *", "hour"},
		{"day of month", "0 0 32 * *", "day-of-month"},
		{"month", "0 0 1 13 *", "month"},
		{"field count", "0 2 * *", "5 or 6 fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := baseTask()
			tk.Trigger.Expression = tt.expr
			var me *model.Error
			if err := tk.Validate(); !errors.As(err, &me) {
				t.Fatalf("Validate: got %v, want *model.Error", err)
			}
			if !strings.Contains(me.Message, tt.want) {
				t.Errorf("message: got %q, want it to mention %q", me.Message, tt.want)
			}
		})
	}
}

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"simple", "daily", true},
		{"digit first", "1st", true},
		{"max length", strings.Repeat("x", 128), true},
		{"too long", strings.Repeat("x", 129), false},
		{"empty", "", false},
		{"uppercase", "Daily", false},
		{"leading dot", ".x", false},
		{"leading underscore", "_x", false},
		{"space", "a b", false},
		{"unicode", "täglich", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := model.ValidName(tt.in); got != tt.want {
				t.Errorf("ValidName(%q): got %v, want %v", tt.in, got, tt.want)
			}
			err := model.ValidateName("node", tt.in)
			if got := err == nil; got != tt.want {
				t.Errorf("ValidateName(%q): got %v, want ok=%v", tt.in, err, tt.want)
			}
			var me *model.Error
			if err != nil && (!errors.As(err, &me) || me.Field != "node") {
				t.Errorf("ValidateName(%q): got %v, want a *model.Error for field node", tt.in, err)
			}
		})
	}
}

func TestTask_Normalize(t *testing.T) {
	tests := []struct {
		name string
		in   model.Task
		want model.Task
	}{
		{
			name: "cron defaults",
			in: model.Task{Name: "a", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "@hourly"},
				Action: model.Action{Type: model.ActionShell, Command: "x"}, Labels: map[string]string{}},
			want: model.Task{Name: "a", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "@hourly", Timezone: "UTC"},
				Action: model.Action{Type: model.ActionShell, Command: "x"},
				Policy: model.Policy{MaxConcurrency: 1, Overlap: "queue", Catchup: "latest", CatchupWindow: dur(60 * time.Second), Backoff: "fixed"}},
		},
		{
			name: "http method defaults to GET",
			in:   model.Task{Name: "a", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionHTTP, URL: "http://x/"}},
			want: model.Task{Name: "a", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionHTTP, URL: "http://x/", Method: "GET"},
				Policy: model.Policy{MaxConcurrency: 1, Overlap: "queue", Catchup: "latest", CatchupWindow: dur(60 * time.Second), Backoff: "fixed"}},
		},
		{
			name: "http method uppercased",
			in:   model.Task{Name: "a", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionHTTP, URL: "http://x/", Method: "post"}},
			want: model.Task{Name: "a", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionHTTP, URL: "http://x/", Method: "POST"},
				Policy: model.Policy{MaxConcurrency: 1, Overlap: "queue", Catchup: "latest", CatchupWindow: dur(60 * time.Second), Backoff: "fixed"}},
		},
		{
			name: "explicit values kept",
			in: model.Task{Name: "a", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "@hourly", Timezone: "Asia/Shanghai"},
				Action: model.Action{Type: model.ActionSDK, Handler: "h"}, Labels: map[string]string{"env": "prod"},
				Policy: model.Policy{MaxConcurrency: 4, Overlap: "skip", Catchup: "none", CatchupWindow: dur(time.Hour), Backoff: "exponential"}},
			want: model.Task{Name: "a", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "@hourly", Timezone: "Asia/Shanghai"},
				Action: model.Action{Type: model.ActionSDK, Handler: "h"}, Labels: map[string]string{"env": "prod"},
				Policy: model.Policy{MaxConcurrency: 4, Overlap: "skip", Catchup: "none", CatchupWindow: dur(time.Hour), Backoff: "exponential"}},
		},
		{
			name: "no timezone for non-cron triggers",
			in:   model.Task{Name: "a", Trigger: model.Trigger{Type: model.TriggerInterval, Every: dur(time.Minute)}, Action: model.Action{Type: model.ActionShell, Command: "x"}},
			want: model.Task{Name: "a", Trigger: model.Trigger{Type: model.TriggerInterval, Every: dur(time.Minute)}, Action: model.Action{Type: model.ActionShell, Command: "x"},
				Policy: model.Policy{MaxConcurrency: 1, Overlap: "queue", Catchup: "latest", CatchupWindow: dur(60 * time.Second), Backoff: "fixed"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in
			got.Normalize()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Normalize:\ngot  %+v\nwant %+v", got, tt.want)
			}
			again := got
			again.Normalize()
			if !reflect.DeepEqual(again, got) {
				t.Errorf("Normalize is not idempotent:\ngot  %+v\nwant %+v", again, got)
			}
		})
	}
}

func TestTime_JSON(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		in       model.Time
		wantJSON string
	}{
		{"zero is null", model.Time{}, `null`},
		{"milliseconds", model.Time{Time: time.Date(2026, 3, 1, 2, 3, 4, 5_000_000, time.UTC)}, `"2026-03-01T02:03:04.005Z"`},
		{"whole second keeps .000", model.Time{Time: time.Date(2026, 3, 1, 2, 3, 4, 0, time.UTC)}, `"2026-03-01T02:03:04.000Z"`},
		{"other zone encodes in UTC", model.Time{Time: time.Date(2026, 3, 1, 2, 0, 0, 120_000_000, shanghai)}, `"2026-02-28T18:00:00.120Z"`},
		{"from UnixMilli", model.UnixMilli(1_700_000_000_123), `"2023-11-14T22:13:20.123Z"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.in)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if got := string(b); got != tt.wantJSON {
				t.Errorf("Marshal: got %s, want %s", got, tt.wantJSON)
			}
			var back model.Time
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("Unmarshal(%s): %v", b, err)
			}
			if !back.Equal(tt.in.Time) {
				t.Errorf("round trip: got %v, want %v", back, tt.in)
			}
			if !back.IsZero() && back.Location() != time.UTC {
				t.Errorf("round trip location: got %v, want UTC", back.Location())
			}
			if got, want := back.Millis(), tt.in.Millis(); got != want {
				t.Errorf("Millis: got %d, want %d", got, want)
			}
		})
	}
}

func TestTime_UnmarshalJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string // RFC 3339 in UTC, "" for the zero Time
		wantErr bool
	}{
		{"null", `null`, "", false},
		{"empty string", `""`, "", false},
		{"offset converted to UTC", `"2026-03-01T10:00:00+08:00"`, "2026-03-01T02:00:00Z", false},
		{"nanoseconds kept", `"2026-03-01T02:00:00.123456789Z"`, "2026-03-01T02:00:00.123456789Z", false},
		{"no zone", `"2026-03-01T02:00:00"`, "", true},
		{"space separator", `"2026-03-01 02:00:00Z"`, "", true},
		{"number", `1700000000`, "", true},
		{"garbage", `"tomorrow"`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got model.Time
			err := json.Unmarshal([]byte(tt.in), &got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Unmarshal(%s): got err %v, want error=%v", tt.in, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if tt.want == "" {
				if !got.IsZero() {
					t.Errorf("Unmarshal(%s): got %v, want the zero Time", tt.in, got)
				}
				return
			}
			if s := got.Format(time.RFC3339Nano); s != tt.want || got.Location() != time.UTC {
				t.Errorf("Unmarshal(%s): got %s in %v, want %s in UTC", tt.in, s, got.Location(), tt.want)
			}
		})
	}
}

func TestDuration_JSON(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     model.Duration
		wantJSON string
		wantErr  bool
	}{
		{"seconds", `"90s"`, dur(90 * time.Second), `"1m30s"`, false},
		{"hours and minutes", `"1h30m"`, dur(90 * time.Minute), `"1h30m0s"`, false},
		{"milliseconds", `"500ms"`, dur(500 * time.Millisecond), `"500ms"`, false},
		{"negative", `"-5m"`, dur(-5 * time.Minute), `"-5m0s"`, false},
		{"empty string is zero", `""`, 0, `"0s"`, false},
		{"bad unit", `"5x"`, 0, "", true},
		{"bare number", `30`, 0, "", true},
		{"bool", `true`, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got model.Duration
			err := json.Unmarshal([]byte(tt.in), &got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Unmarshal(%s): got err %v, want error=%v", tt.in, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got != tt.want {
				t.Errorf("Unmarshal(%s): got %v, want %v", tt.in, got.Std(), tt.want.Std())
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(b) != tt.wantJSON {
				t.Errorf("Marshal: got %s, want %s", b, tt.wantJSON)
			}
			var back model.Duration
			if err := json.Unmarshal(b, &back); err != nil || back != got {
				t.Errorf("round trip: got %v (err %v), want %v", back.Std(), err, got.Std())
			}
		})
	}
}

// TestTask_JSONErrorField checks that a bad time or duration inside a task
// is reported with its full field path, which the API turns into the
// error's field.
func TestTask_JSONErrorField(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantField string
	}{
		{"policy.timeout", `{"policy":{"timeout":"5x"}}`, "policy.timeout"},
		{"policy.retryInterval", `{"policy":{"retryInterval":"5x"}}`, "policy.retryInterval"},
		{"trigger.every number", `{"trigger":{"every":60}}`, "trigger.every"},
		{"trigger.at", `{"trigger":{"at":"2026-13-01T00:00:00Z"}}`, "trigger.at"},
		{"trigger.startAt", `{"trigger":{"startAt":"yesterday"}}`, "trigger.startAt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tk model.Task
			err := json.Unmarshal([]byte(tt.in), &tk)
			var ute *json.UnmarshalTypeError
			if !errors.As(err, &ute) {
				t.Fatalf("Unmarshal: got %v, want a *json.UnmarshalTypeError", err)
			}
			if ute.Field != tt.wantField {
				t.Errorf("field: got %q, want %q", ute.Field, tt.wantField)
			}
		})
	}
}

func TestTask_JSONRoundTrip(t *testing.T) {
	in := model.Task{
		Name:    "daily_report",
		Trigger: model.Trigger{Type: model.TriggerInterval, Every: dur(90 * time.Minute), StartAt: timePtr(t, "2026-01-01T00:15:00.250Z")},
		Action:  model.Action{Type: model.ActionHTTP, URL: "https://x/", Timeout: dur(10 * time.Second)},
		Policy:  model.Policy{MaxRetries: 2, RetryInterval: dur(5 * time.Minute), Notify: []string{"http://hooks/ax"}},
		Labels:  map[string]string{"env": "prod"},
		Version: 3, CreatedAt: model.UnixMilli(1_700_000_000_001), UpdatedAt: model.UnixMilli(1_700_000_000_002), UpdatedBy: "alice",
		NextFireTimes: []model.Time{model.UnixMilli(1_700_000_000_003)},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	for _, want := range []string{`"every":"1h30m0s"`, `"startAt":"2026-01-01T00:15:00.250Z"`, `"createdAt":"2023-11-14T22:13:20.001Z"`, `"retryInterval":"5m0s"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("Marshal: got %s, want it to contain %s", b, want)
		}
	}
	var out model.Task
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("round trip:\ngot  %+v\nwant %+v", out, in)
	}

	// Unset times encode as null and omitted durations stay out.
	b, err = json.Marshal(model.Task{Name: "a"})
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	for _, want := range []string{`"createdAt":null`, `"updatedAt":null`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("Marshal: got %s, want it to contain %s", b, want)
		}
	}
	for _, unwanted := range []string{`"every"`, `"timeout"`, `"startAt"`} {
		if strings.Contains(string(b), unwanted) {
			t.Errorf("Marshal: got %s, want no %s", b, unwanted)
		}
	}
}

func TestTask_NextFires(t *testing.T) {
	tests := []struct {
		name    string
		trigger model.Trigger
		now     string
		n       int
		want    []string
	}{
		{
			name:    "cron in Asia/Shanghai",
			trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 2 * * *", Timezone: "Asia/Shanghai"},
			now:     "2026-03-01T00:00:00Z", // 08:00 in Shanghai
			n:       3,
			want:    []string{"2026-03-01T18:00:00Z", "2026-03-02T18:00:00Z", "2026-03-03T18:00:00Z"},
		},
		{
			name:    "cron fire time equal to now is excluded",
			trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 2 * * *", Timezone: "Asia/Shanghai"},
			now:     "2026-03-01T18:00:00Z",
			n:       2,
			want:    []string{"2026-03-02T18:00:00Z", "2026-03-03T18:00:00Z"},
		},
		{
			name:    "cron in UTC by default",
			trigger: model.Trigger{Type: model.TriggerCron, Expression: "*/15 * * * *"},
			now:     "2026-03-01T10:07:00Z",
			n:       3,
			want:    []string{"2026-03-01T10:15:00Z", "2026-03-01T10:30:00Z", "2026-03-01T10:45:00Z"},
		},
		{
			name:    "interval anchored at the epoch",
			trigger: model.Trigger{Type: model.TriggerInterval, Every: dur(time.Hour)},
			now:     "2026-03-01T10:30:00Z",
			n:       3,
			want:    []string{"2026-03-01T11:00:00Z", "2026-03-01T12:00:00Z", "2026-03-01T13:00:00Z"},
		},
		{
			name:    "interval with startAt in the future",
			trigger: model.Trigger{Type: model.TriggerInterval, Every: dur(90 * time.Minute), StartAt: &model.Time{Time: time.Date(2026, 3, 1, 10, 15, 0, 0, time.UTC)}},
			now:     "2026-03-01T10:00:00Z",
			n:       3,
			want:    []string{"2026-03-01T10:15:00Z", "2026-03-01T11:45:00Z", "2026-03-01T13:15:00Z"},
		},
		{
			name:    "interval with startAt in the past",
			trigger: model.Trigger{Type: model.TriggerInterval, Every: dur(90 * time.Minute), StartAt: &model.Time{Time: time.Date(2026, 3, 1, 10, 15, 0, 0, time.UTC)}},
			now:     "2026-03-01T12:00:00Z",
			n:       2,
			want:    []string{"2026-03-01T13:15:00Z", "2026-03-01T14:45:00Z"},
		},
		{
			name:    "once in the future",
			trigger: model.Trigger{Type: model.TriggerOnce, At: &model.Time{Time: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)}},
			now:     "2026-03-01T00:00:00Z",
			n:       3,
			want:    []string{"2026-03-02T00:00:00Z"},
		},
		{
			name:    "once in the past",
			trigger: model.Trigger{Type: model.TriggerOnce, At: &model.Time{Time: time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC)}},
			now:     "2026-03-01T00:00:00Z",
			n:       3,
			want:    nil,
		},
		{
			name:    "once with only a delay has no resolved time",
			trigger: model.Trigger{Type: model.TriggerOnce, Delay: dur(time.Minute)},
			now:     "2026-03-01T00:00:00Z",
			n:       3,
			want:    nil,
		},
		{
			name:    "event never fires by itself",
			trigger: model.Trigger{Type: model.TriggerEvent},
			now:     "2026-03-01T00:00:00Z",
			n:       3,
			want:    nil,
		},
		{
			name: "cron window across the Berlin fall-back, by instant",
			trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 * * * *", Timezone: "Europe/Berlin",
				StartAt: &model.Time{Time: time.Date(2025, 10, 26, 1, 0, 0, 0, time.UTC)}, EndAt: &model.Time{Time: time.Date(2025, 10, 26, 3, 0, 0, 0, time.UTC)}},
			now:  "2025-10-25T00:00:00Z",
			n:    5,
			want: []string{"2025-10-26T02:00:00Z", "2025-10-26T03:00:00Z"},
		},
		{
			name:    "maxRuns caps the fires left",
			trigger: model.Trigger{Type: model.TriggerCron, Expression: "*/15 * * * *", MaxRuns: 5},
			now:     "2026-03-01T10:07:00Z",
			n:       5,
			want:    []string{"2026-03-01T10:15:00Z", "2026-03-01T10:30:00Z"}, // 3 runs made (below)
		},
		{
			name:    "invalid cron gives nothing",
			trigger: model.Trigger{Type: model.TriggerCron, Expression: "61 * * * *"},
			now:     "2026-03-01T00:00:00Z",
			n:       3,
			want:    nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := model.Task{Name: "a", Trigger: tt.trigger}
			if tt.trigger.MaxRuns > 0 {
				tk.Runs = 3
			}
			fires := tk.NextFires(mustTime(t, tt.now), tt.n)
			var got []string
			for _, f := range fires {
				if f.Location() != time.UTC {
					t.Errorf("fire time %v: got location %v, want UTC", f, f.Location())
				}
				got = append(got, f.Format(time.RFC3339))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NextFires: got %q, want %q", got, tt.want)
			}
		})
	}
}
