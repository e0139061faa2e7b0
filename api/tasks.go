package api

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/ax-scheduler/ax/api/visible"
	"github.com/ax-scheduler/ax/internal/strictjson"
	"github.com/ax-scheduler/ax/internal/yamljson"
	"github.com/ax-scheduler/ax/model"
)

// Task handlers: they call the TaskBackend (and the console's role for
// GET /v1/tasks?summary=true).

func (s taskRoutes) putTask(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	dryRun, err := boolParam(r, "dryRun")
	if err != nil {
		writeError(w, err)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, strictjson.Error(err))
		return
	}
	if body, err = yamlBody(r, body); err != nil {
		writeError(w, err)
		return
	}
	var t model.Task
	if err := strictjson.Decode(body, &t); err != nil {
		writeError(w, err)
		return
	}
	// Paused is operational state: a body without it (or with null)
	// leaves it as it is.
	var set struct {
		Paused *bool `json:"paused"`
	}
	_ = json.Unmarshal(body, &set) // strictjson.Decode has judged the body
	opts := PutOptions{KeepPaused: set.Paused == nil}
	if t.Name == "" {
		t.Name = name
	}
	if t.Name != name {
		writeError(w, model.FieldErrorf("name", "body name %q does not match the URL's %q", t.Name, name))
		return
	}
	err = t.Validate()
	if err == nil {
		err = s.cfg.CheckAction(&t.Action)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if dryRun {
		if s.barrier(w, r) {
			reply(w)(s.b.tasks.PlanTask(r.Context(), &t, opts))
		}
		return
	}
	reply(w)(s.b.tasks.PutTask(r.Context(), c, &t, opts))
}

// yamlBody converts a YAML body (Content-Type application/yaml, as the
// console sends a definition written in YAML) to JSON as ax task apply
// does; any other body is returned as it is.
func yamlBody(r *http.Request, body []byte) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/yaml" && mt != "application/x-yaml" && mt != "text/yaml" {
		return body, nil
	}
	j, err := yamljson.Document(body)
	if err != nil {
		return nil, &model.Error{Code: model.CodeInvalid, Message: "bad YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	return j, nil
}

func (s taskRoutes) deleteTask(w http.ResponseWriter, r *http.Request) {
	taskWrite(w, r, s.b.tasks.DeleteTask)
}

func (s taskRoutes) pauseTask(w http.ResponseWriter, r *http.Request) {
	taskWrite(w, r, s.b.tasks.PauseTask)
}

func (s taskRoutes) resumeTask(w http.ResponseWriter, r *http.Request) {
	taskWrite(w, r, s.b.tasks.ResumeTask)
}

func (s taskRoutes) promote(w http.ResponseWriter, r *http.Request) {
	taskWrite(w, r, s.b.tasks.PromoteRollout)
}

func (s taskRoutes) abort(w http.ResponseWriter, r *http.Request) {
	taskWrite(w, r, s.b.tasks.AbortRollout)
}

func (s taskRoutes) rollout(w http.ResponseWriter, r *http.Request) {
	s.readTask(w, r, func(ctx contextT, n string) (any, error) { return s.b.tasks.Rollout(ctx, n) })
}

// taskWrite serves a write on one task that takes no body.
func taskWrite(w http.ResponseWriter, r *http.Request, fn func(ctx contextT, c Caller, name string) (*model.WriteResult, error)) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	reply(w)(fn(r.Context(), c, name))
}

func (s taskRoutes) getTask(w http.ResponseWriter, r *http.Request) {
	s.readTask(w, r, func(ctx contextT, n string) (any, error) { return s.b.tasks.GetTask(ctx, n) })
}

func (s taskRoutes) taskHistory(w http.ResponseWriter, r *http.Request) {
	s.readTask(w, r, func(ctx contextT, n string) (any, error) { return s.b.tasks.TaskHistory(ctx, n) })
}

func (s taskRoutes) taskEvents(w http.ResponseWriter, r *http.Request) {
	s.readTask(w, r, func(ctx contextT, n string) (any, error) { return s.b.tasks.TaskEvents(ctx, n) })
}

// readTask serves a read of one task: a valid name, the read barrier
// (unless ?stale=true), then fn's answer.
func (s *Server) readTask(w http.ResponseWriter, r *http.Request, fn func(ctx contextT, name string) (any, error)) {
	name, err := pathName(r, "name")
	if err != nil {
		writeError(w, err)
		return
	}
	if !s.barrier(w, r) {
		return
	}
	v, err := fn(r.Context(), name)
	reply(w)(visible.For(PrincipalFrom(r.Context()), v), err)
}

func (s taskRoutes) listTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := model.TaskFilter{Cursor: q.Get("cursor")}
	for _, l := range q["label"] {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			writeError(w, model.FieldErrorf("label", "want key=value, got %q", l))
			return
		}
		if f.Labels == nil {
			f.Labels = map[string]string{}
		}
		f.Labels[k] = v
	}
	if p := q.Get("paused"); p != "" {
		b, err := strconv.ParseBool(p)
		if err != nil {
			writeError(w, model.FieldErrorf("paused", "must be true or false, got %q", p))
			return
		}
		f.Paused = &b
	}
	summary, runs, err := summaryParams(q)
	if err != nil {
		writeError(w, err)
		return
	}
	s.list(w, r, &f.Limit, func() (any, error) {
		var l any
		var err error
		if summary { // the console's list: its role answers
			l, err = s.b.console.TaskSummaries(r.Context(), f, runs)
		} else {
			l, err = s.b.tasks.ListTasks(r.Context(), f)
		}
		return visible.For(PrincipalFrom(r.Context()), l), err
	})
}
