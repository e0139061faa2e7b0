package action

import (
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model/tmpl"
)

// The fuzz targets' seed corpora are in testdata/fuzz/<target>/, with the
// attacks of issue 9; `go test` runs them as ordinary tests.

// fuzzJob is the job the fuzz targets expand templates for: value is
// Params.v and the secret "s".
func fuzzJob(value string) Job {
	return Job{Task: "t", Params: map[string]string{"v": value}, Payload: []byte(`{"p":[1,"x"]}`),
		Secrets: map[string]string{"s": value}}
}

// FuzzExpandCommand expands random shell command templates with random
// values: no panic, no output over the limit, no NUL byte in a command.
func FuzzExpandCommand(f *testing.F) {
	f.Add("echo {{.Params.v}}", "x")
	f.Fuzz(func(t *testing.T, command, value string) {
		got, err := expandCommand(command, fuzzJob(value))
		if err != nil {
			return
		}
		if len(got) > tmpl.OutputLimit {
			t.Errorf("expanded command is %d bytes, over the limit", len(got))
		}
		if strings.IndexByte(got, 0) >= 0 {
			t.Errorf("expanded command %q has a NUL byte", got)
		}
	})
}

// fuzzSentinel stands for a value in FuzzExpandHTTP: no escaping changes
// it, so where it lands shows the structure a template gives a value.
const fuzzSentinel = "zSENTINELz"

// FuzzExpandHTTP expands random url and body templates with random
// values: no panic, no output over the limit. When the template is
// literal text with '@' for {{.Params.v}}, the value must not change the
// structure: the URL's scheme, host, path segments, query pairs and
// fragment, and the JSON body's shape, are those the sentinel gives, with
// the value, decoded, where the sentinel was.
func FuzzExpandHTTP(f *testing.F) {
	f.Add("api/users/@/profile?id=@", "../../admin?x=")
	f.Fuzz(func(t *testing.T, text, value string) {
		job := fuzzJob(value)
		for _, expand := range []func() (string, error){
			func() (string, error) { return expandURL(text, job) },
			func() (string, error) { return expandBody(text, job, "", false) },
			func() (string, error) { return expandBody(text, job, "application/x-www-form-urlencoded", true) },
		} {
			if got, err := expand(); err == nil && len(got) > tmpl.OutputLimit {
				t.Errorf("expanded %q to %d bytes, over the limit", text, len(got))
			}
		}
		if strings.Contains(text, "{{") || strings.Contains(text, "}}") || strings.Contains(text, fuzzSentinel) {
			return
		}
		tpl := strings.ReplaceAll(text, "@", "{{.Params.v}}")
		fuzzURLStructure(t, "https://example.com/"+tpl, value)
		fuzzJSONStructure(t, tpl, value)
	})
}

// fuzzURLStructure checks that value, in url template tpl, keeps the
// structure the sentinel gives.
func fuzzURLStructure(t *testing.T, tpl, value string) {
	t.Helper()
	if strings.Contains(tpl, "%") {
		return // a broken escape in the template may take in a value's first bytes
	}
	s, errS := expandURL(tpl, fuzzJob(fuzzSentinel))
	v, errV := expandURL(tpl, fuzzJob(value))
	if overTime(errS) || overTime(errV) {
		return // a stall of the fuzzing machine, not the template
	}
	if errS != nil {
		if errV == nil {
			t.Fatalf("%q: the sentinel fails (%v) but %q expands to %q", tpl, errS, value, v)
		}
		return
	}
	if errV != nil {
		var ve *valueError
		if !errors.As(errV, &ve) && !errors.Is(errV, tmpl.ErrOutput) {
			t.Fatalf("%q with %q: %v, though the sentinel expands", tpl, value, errV)
		}
		return
	}
	ps, pv := urlParts(s), urlParts(v)
	if len(ps) != len(pv) {
		t.Fatalf("%q: value %q gives %q, parts %q; the sentinel gives %q, parts %q", tpl, value, v, pv, s, ps)
	}
	for i := range ps {
		if ps[i].sep != pv[i].sep {
			t.Fatalf("%q: value %q gives %q; the sentinel gives %q", tpl, value, v, s)
		}
		ds, err := ps[i].decode()
		if err != nil {
			continue
		}
		dv, err := pv[i].decode()
		if want := strings.ReplaceAll(ds, fuzzSentinel, value); err != nil || dv != want {
			t.Fatalf("%q: value %q gives %q; part %d decodes to %q, %v; want %q", tpl, value, v, i, dv, err, want)
		}
	}
}

// urlPart is a piece of a URL between separators: sep is the separator
// before it ("" for the scheme and host).
type urlPart struct{ sep, text string }

func (p urlPart) decode() (string, error) {
	if p.sep == "?" || p.sep == "&" || p.sep == "=" {
		return url.QueryUnescape(p.text)
	}
	return url.PathUnescape(p.text)
}

// urlParts splits an absolute URL at its structural separators: '/' in
// the path, '?', '&' and '=' in the query, '#'.
func urlParts(u string) []urlPart {
	seps := "/?#"
	start := strings.Index(u, "://") + 3
	parts := []urlPart{}
	sep := ""
	for i := start; i <= len(u); i++ {
		if i < len(u) && strings.IndexByte(seps, u[i]) < 0 {
			continue
		}
		parts = append(parts, urlPart{sep, u[start:i]})
		if i == len(u) {
			break
		}
		sep = string(u[i])
		switch sep {
		case "?":
			seps = "&=#"
		case "#":
			seps = ""
		}
		start = i + 1
	}
	return parts
}

// fuzzJSONStructure checks that value, in body template tpl, keeps the
// JSON shape the sentinel gives.
func fuzzJSONStructure(t *testing.T, tpl, value string) {
	t.Helper()
	s, err := expandBody(tpl, fuzzJob(fuzzSentinel), "", false)
	var ds any
	if err != nil || json.Unmarshal([]byte(s), &ds) != nil {
		return
	}
	v, err := expandBody(tpl, fuzzJob(value), "", false)
	if err != nil {
		if !errors.Is(err, tmpl.ErrOutput) && !overTime(err) {
			t.Fatalf("%q with %q: %v, though the sentinel gives JSON %s", tpl, value, err, s)
		}
		return
	}
	var dv any
	if err := json.Unmarshal([]byte(v), &dv); err != nil {
		t.Fatalf("%q with %q gives %q, not JSON (%v); the sentinel gives %s", tpl, value, v, err, s)
	}
	var canon string // value as a JSON string decodes (invalid UTF-8 replaced)
	_ = json.Unmarshal([]byte(jsonString(value)), &canon)
	want, ok := replaceInJSON(ds, canon)
	if ok && !reflect.DeepEqual(dv, want) {
		t.Fatalf("%q with %q gives %#v, want %#v", tpl, value, dv, want)
	}
}

// replaceInJSON replaces the sentinel by value in the strings and keys of
// a decoded JSON value; not ok if that makes two keys of an object one.
func replaceInJSON(a any, value string) (any, bool) {
	switch a := a.(type) {
	case string:
		return strings.ReplaceAll(a, fuzzSentinel, value), true
	case []any:
		out := make([]any, len(a))
		for i, e := range a {
			var ok bool
			if out[i], ok = replaceInJSON(e, value); !ok {
				return nil, false
			}
		}
		return out, true
	case map[string]any:
		out := make(map[string]any, len(a))
		for k, e := range a {
			k = strings.ReplaceAll(k, fuzzSentinel, value)
			r, ok := replaceInJSON(e, value)
			if _, dup := out[k]; dup || !ok {
				return nil, false
			}
			out[k] = r
		}
		return out, true
	}
	return a, true
}
