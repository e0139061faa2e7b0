package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
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
