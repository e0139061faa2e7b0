package api

import (
	"context"

	"github.com/ax-scheduler/ax/model"
)

// AlertsBackend answers the alert records and manages silences.
type AlertsBackend interface {
	// ListAlerts lists incidents newest first (firing and resolved),
	// with the alerts only this node sees (quorum_lost) merged in.
	ListAlerts(ctx context.Context, q model.AlertQuery) (*model.AlertList, error)
	// PutSilence creates a silence from a validated request.
	PutSilence(ctx context.Context, c Caller, req model.SilenceRequest) (*model.Silence, error)
	// ListSilences lists the silences in force.
	ListSilences(ctx context.Context) (*model.SilenceList, error)
	// DeleteSilence removes a silence (model.ErrNotFound if there is none).
	DeleteSilence(ctx context.Context, c Caller, id string) error
}
