package api

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// Cluster handlers: membership and health, over the ClusterBackend.

// health answers the node's health: 200, or 503 with the same JSON when
// the node is not healthy (its Problem says why).
func (s clusterRoutes) health(w http.ResponseWriter, r *http.Request) {
	h := s.b.cluster.Health(r.Context())
	code := http.StatusOK
	if h.Problem != "" {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, h)
}

func (s clusterRoutes) join(w http.ResponseWriter, r *http.Request) {
	var req member.JoinRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := model.ValidateName("id", req.ID); err != nil {
		writeError(w, err)
		return
	}
	for field, addr := range map[string]string{"raftAddr": req.RaftAddr, "httpAddr": req.HTTPAddr} {
		if err := validHostPort(field, addr); err != nil {
			writeError(w, err)
			return
		}
	}
	if err := s.b.cluster.Join(r.Context(), req); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func (s clusterRoutes) memberKey(w http.ResponseWriter, r *http.Request) {
	reply(w)(s.b.cluster.MemberKey(r.Context()))
}

func (s clusterRoutes) cluster(w http.ResponseWriter, r *http.Request) {
	if !s.barrier(w, r) {
		return
	}
	reply(w)(s.b.cluster.Cluster(r.Context()))
}

// Snapshot headers: the state's applied index (before the body) and its
// SHA-256 (a trailer, after it).
const (
	HeaderSnapshotIndex  = "X-AX-Snapshot-Index"
	HeaderSnapshotSHA256 = "X-AX-Snapshot-Sha256"
)

// snapshot streams the node's state, linearizable (what was acknowledged
// before the request is in it) and checksummed (a SHA-256 trailer).
func (s clusterRoutes) snapshot(w http.ResponseWriter, r *http.Request) {
	if !s.barrier(w, r) {
		return
	}
	w.Header().Set("Trailer", HeaderSnapshotSHA256)
	h := sha256.New()
	started := false
	err := s.b.cluster.Snapshot(r.Context(), io.MultiWriter(w, h), func(index uint64) {
		started = true
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set(HeaderSnapshotIndex, strconv.FormatUint(index, 10))
		w.WriteHeader(http.StatusOK)
	})
	if err != nil && !started {
		writeError(w, err)
		return
	}
	if err == nil {
		w.Header().Set(HeaderSnapshotSHA256, hex.EncodeToString(h.Sum(nil)))
	}
}

// IsRestore: r restores a saved state (POST /v1/snapshot), a body of any size that outlives the tokens it replaces.
func IsRestore(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Path == "/v1/snapshot"
}

// restore makes the state file in the body the cluster's state (ax
// snapshot restore), its SHA-256 checked against the header's.
func (s clusterRoutes) restore(w http.ResponseWriter, r *http.Request) {
	sum := r.Header.Get(HeaderSnapshotSHA256)
	if sum != "" && (len(sum) != sha256.Size*2 || strings.Trim(sum, "0123456789abcdef") != "") {
		writeError(w, model.FieldErrorf(HeaderSnapshotSHA256, "must be a SHA-256 in lowercase hex (64 digits), got %q", sum))
		return
	}
	reply(w)(s.b.cluster.Restore(r.Context(), r.Body, sum))
}

func (s clusterRoutes) removeNode(w http.ResponseWriter, r *http.Request) {
	id, err := pathName(r, "node")
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.b.cluster.RemoveNode(r.Context(), id); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func (s clusterRoutes) transfer(w http.ResponseWriter, r *http.Request) {
	var req member.TransferRequest
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	if req.ID != "" {
		if err := model.ValidateName("id", req.ID); err != nil {
			writeError(w, err)
			return
		}
	}
	if err := s.b.cluster.Transfer(r.Context(), req.ID); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}
