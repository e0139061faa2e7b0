package ui

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

func serve(t *testing.T, h http.Handler, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestMountRoutes(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-API", "1")
		w.WriteHeader(http.StatusTeapot)
	})
	h := Mount(api)
	cases := []struct {
		method, target string
		code           int
		location, api  string
	}{
		{"GET", "/", http.StatusFound, "/ui/", ""},
		{"GET", "/ui", http.StatusFound, "/ui/", ""},
		{"POST", "/", http.StatusTeapot, "", "1"},
		{"GET", "/ui/", http.StatusOK, "", ""},
		{"GET", "/ui/js/app.js", http.StatusOK, "", ""},
		{"GET", "/ui/nope.js", http.StatusNotFound, "", ""},
		{"POST", "/ui/", http.StatusMethodNotAllowed, "", ""},
		{"GET", "/v1/tasks", http.StatusTeapot, "", "1"},
		{"GET", "/healthz", http.StatusTeapot, "", "1"},
	}
	for _, c := range cases {
		w := serve(t, h, c.method, c.target, nil)
		if w.Code != c.code || w.Header().Get("Location") != c.location || w.Header().Get("X-API") != c.api {
			t.Errorf("%s %s: %d location=%q api=%q, want %d %q %q", c.method, c.target, w.Code,
				w.Header().Get("Location"), w.Header().Get("X-API"), c.code, c.location, c.api)
		}
	}
}

func TestAssetHeaders(t *testing.T) {
	h := Handler()
	w := serve(t, h, "GET", "/ui/", nil)
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("index content type %q", ct)
	}
	for k := range securityHeaders {
		if w.Header().Get(k) == "" {
			t.Errorf("missing %s", k)
		}
	}
	etag := w.Header().Get("ETag")
	if etag == "" || w.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("etag %q cache %q", etag, w.Header().Get("Cache-Control"))
	}
	if w := serve(t, h, "GET", "/ui/", map[string]string{"If-None-Match": etag}); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Fatalf("revalidation: %d, %d bytes", w.Code, w.Body.Len())
	}
	plain := serve(t, h, "GET", "/ui/js/task.js", nil)
	gz := serve(t, h, "GET", "/ui/js/task.js", map[string]string{"Accept-Encoding": "br, gzip"})
	if gz.Header().Get("Content-Encoding") != "gzip" || plain.Header().Get("Content-Encoding") != "" {
		t.Fatalf("encodings: gz %q plain %q", gz.Header().Get("Content-Encoding"), plain.Header().Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	unz, _ := io.ReadAll(zr)
	if !bytes.Equal(unz, plain.Body.Bytes()) || gz.Body.Len() >= plain.Body.Len() {
		t.Fatalf("gzip body %d bytes unzips to %d, plain %d", gz.Body.Len(), len(unz), plain.Body.Len())
	}
	if ct := plain.Header().Get("Content-Type"); !strings.Contains(ct, "javascript") {
		t.Fatalf("js content type %q", ct)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for ae, want := range map[string]bool{"": false, "gzip": true, "br, gzip;q=0.5": true, "gzip;q=0": false,
		"deflate": false, "GZIP": true, "gzip; q=0.0": false, "identity, gzip ;q=1": true} {
		if got := acceptsGzip(ae); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", ae, got, want)
		}
	}
}

// TestModuleGraph checks that every module a script imports, and every
// file index.html loads, is an embedded asset: a typo would otherwise
// show only as a blank page in a browser.
func TestModuleGraph(t *testing.T) {
	imp := regexp.MustCompile(`(?m)^import .* from '(\.[^']+)';|^import '(\.[^']+)';`)
	ref := regexp.MustCompile(`(?:src|href)="([^"#:]+)"`)
	exists := func(p string) bool { _, err := fs.Stat(files, "static/"+p); return err == nil }
	index, _ := files.ReadFile("static/index.html")
	for _, m := range ref.FindAllStringSubmatch(string(index), -1) {
		if !exists(m[1]) {
			t.Errorf("index.html loads %s, which is not embedded", m[1])
		}
	}
	n := 0
	_ = fs.WalkDir(files, "static/js", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, _ := files.ReadFile(p)
		for _, m := range imp.FindAllStringSubmatch(string(body), -1) {
			target := path.Join(path.Dir(strings.TrimPrefix(p, "static/")), m[1]+m[2])
			n++
			if !exists(target) {
				t.Errorf("%s imports %s, which is not embedded", p, target)
			}
		}
		return nil
	})
	if n < 10 {
		t.Fatalf("found only %d imports: the pattern is broken", n)
	}
}

// TestFirstLoadBudget keeps what a first visit transfers (every asset,
// compressed as served) within 300 KB.
func TestFirstLoadBudget(t *testing.T) {
	h := Handler()
	total := 0
	_ = fs.WalkDir(files, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		w := serve(t, h, "GET", Prefix+strings.TrimPrefix(p, "static/"), map[string]string{"Accept-Encoding": "gzip"})
		total += w.Body.Len()
		return nil
	})
	t.Logf("first load: %d bytes compressed", total)
	if total > 300<<10 {
		t.Fatalf("first load is %d bytes compressed, budget 300 KB", total)
	}
}
