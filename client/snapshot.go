package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/ax-scheduler/ax/model/member"
)

// Snapshot headers (api.HeaderSnapshotIndex, api.HeaderSnapshotSHA256).
const (
	headerSnapshotIndex  = "X-AX-Snapshot-Index"
	headerSnapshotSHA256 = "X-AX-Snapshot-Sha256"
)

// SnapshotInfo is what SaveSnapshot wrote: the state's applied index,
// its size and its SHA-256 (checked against the server's).
type SnapshotInfo struct {
	Index  uint64
	Size   int64
	SHA256 string
}

// SaveSnapshot writes the cluster's state to w (GET /v1/snapshot, admin):
// a state file as ax agent -restore takes it, consistent as of an applied
// index that holds every write acknowledged before the call. It asks the
// addresses in turn until one answers; once bytes have arrived it does
// not retry. The SHA-256 of what arrived must be the server's.
func (c *Client) SaveSnapshot(ctx context.Context, w io.Writer) (*SnapshotInfo, error) {
	resp, base, err := c.openGet(ctx, ctx, Request{Method: http.MethodGet, Path: "/v1/snapshot"}, http.Header{})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	index, _ := strconv.ParseUint(resp.Header.Get(headerSnapshotIndex), 10, 64)
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: snapshot from %s cut after %d bytes: %w", base, n, err)
	}
	got, want := hex.EncodeToString(h.Sum(nil)), resp.Trailer.Get(headerSnapshotSHA256)
	if want == "" {
		return nil, fmt.Errorf("client: snapshot from %s: no checksum trailer (the server failed while writing it)", base)
	}
	if got != want {
		return nil, fmt.Errorf("client: snapshot from %s: SHA-256 %s of %d bytes received, the server's is %s", base, got, n, want)
	}
	return &SnapshotInfo{Index: index, Size: n, SHA256: got}, nil
}

// RestoreSnapshot restores the state file f (one ax snapshot save wrote)
// as the running cluster's state (POST /v1/snapshot, admin): every
// member installs it and the leader's services start again from it. The
// cluster keeps its members and member key; its ACL tokens become the
// file's. f is read twice: for its SHA-256, which the server checks, and
// to send it. The call moves on to the next address only when an address
// could not be reached (nothing sent): a restore is not repeated once it
// may have started.
func (c *Client) RestoreSnapshot(ctx context.Context, f io.ReadSeeker) (*member.StateInfo, error) {
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return nil, fmt.Errorf("client: restore: reading the file: %w", err)
	}
	// Expect: 100-continue: a refusal (no token, not admin) is answered
	// before the file is sent, not cut into by a reset connection.
	hdr := http.Header{"Content-Type": {"application/octet-stream"}, "Expect": {"100-continue"},
		headerSnapshotSHA256: {hex.EncodeToString(h.Sum(nil))}}
	req := Request{Method: http.MethodPost, Path: "/v1/snapshot"}
	var failed []error
	for _, base := range c.bases {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("client: restore: %w", err)
		}
		hr, err := c.newRequest(ctx, base, req, nil, hdr)
		if err != nil {
			return nil, err
		}
		hr.Body, hr.ContentLength = io.NopCloser(f), size
		r, err := c.hc.Do(hr)
		if err != nil {
			_, err = c.sendFailed(ctx, req, nil, hr.URL.String(), err)
			if !errors.Is(err, ErrNotSent) || ctx.Err() != nil {
				return nil, err
			}
			failed = append(failed, err)
			continue
		}
		data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("client: restore: reading the answer of %s: %w", base, err)
		}
		if r.StatusCode/100 != 2 {
			return nil, answerError(req.Method, hr.URL.String(), r.StatusCode, data)
		}
		var info member.StateInfo
		if err := json.Unmarshal(data, &info); err != nil {
			return nil, fmt.Errorf("client: restore: the answer of %s: %w", base, err)
		}
		return &info, nil
	}
	return nil, everyAddressFailed(failed)
}
