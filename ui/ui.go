// Package ui serves the operator console: a single-page application of
// plain ES modules and one style sheet, embedded in the binary and served
// at /ui/. It is a client of the public /v1 API like any other, so every
// figure it shows can be had from the API; it holds no data of its own and
// needs no build step (see docs/design.md, "The console: plain ES
// modules").
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
)

//go:embed static
var files embed.FS

// Prefix is the path the console is served under.
const Prefix = "/ui/"

// securityHeaders are set on every console answer: the console runs only
// its own scripts and styles, talks only to its own origin, and may not be
// framed (clickjacking of the action buttons).
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"X-Frame-Options":        "DENY",
	"Referrer-Policy":        "no-referrer",
}

type asset struct {
	body, gz []byte
	etag     string
	ctype    string
}

// Handler serves the console's assets: GET /ui/ is the application shell,
// GET /ui/<file> its files. Assets are compressed once, when the handler is
// built; answers carry an ETag (the content's hash), so a browser
// revalidates with one small request and an upgraded binary is picked up
// at once.
func Handler() http.Handler {
	assets := map[string]*asset{}
	err := fs.WalkDir(files, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		a := &asset{body: body, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, ctype: mime.TypeByExtension(path.Ext(p))}
		if a.ctype == "" {
			a.ctype = "application/octet-stream"
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(body)
		_ = zw.Close()
		if buf.Len() < len(body) {
			a.gz = buf.Bytes()
		}
		assets[strings.TrimPrefix(p, "static/")] = a
		return nil
	})
	if err != nil {
		panic("ui: embedded assets unreadable: " + err.Error()) // a broken build, not input
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for k, v := range securityHeaders {
			h.Set(k, v)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		if name == "" {
			name = "index.html"
		}
		a := assets[name]
		if a == nil {
			http.NotFound(w, r)
			return
		}
		h.Set("Content-Type", a.ctype)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		h.Add("Vary", "Accept-Encoding")
		if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, a.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		body := a.body
		if a.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
			h.Set("Content-Encoding", "gzip")
			body = a.gz
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
}

// Mount routes the console beside api: "/" redirects to the console, paths
// under /ui/ are the console's, everything else is api's.
func Mount(api http.Handler) http.Handler {
	console := Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/" || p == "/ui":
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, Prefix, http.StatusFound)
				return
			}
			api.ServeHTTP(w, r)
		case strings.HasPrefix(p, Prefix):
			console.ServeHTTP(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	})
}

// acceptsGzip reports whether an Accept-Encoding header admits gzip
// (listed without q=0).
func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		enc, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && k == "q" {
				q, err := strconv.ParseFloat(v, 64)
				return err == nil && q > 0
			}
		}
		return true
	}
	return false
}
