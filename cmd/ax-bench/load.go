package main

import (
	"context"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// benchTask writes a high-volume event task: no executor runs it in most
// scenarios, so its fired instances stay READY (a concurrency limit of 1
// would queue them as BLOCKED).
func benchTask(ctx context.Context, cl *client.Client, name string) error {
	_, err := cl.PutTask(ctx, &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 1_000_000}})
	return err
}
