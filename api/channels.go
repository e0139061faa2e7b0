package api

import (
	"net/http"

	"github.com/ax-scheduler/ax/api/visible"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
)

func (s alertRoutes) putChannel(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	var ch channel.Channel
	if err := decode(r, &ch); err != nil {
		writeError(w, err)
		return
	}
	if ch.Name != "" && ch.Name != name {
		writeError(w, model.FieldErrorf("name", "%q differs from the name in the path (%q)", ch.Name, name))
		return
	}
	ch.Name = name
	if err := ch.Validate(); err != nil {
		writeError(w, err)
		return
	}
	reply(w)(s.b.channels.PutChannel(r.Context(), c, name, &ch))
}

func (s alertRoutes) listChannels(w http.ResponseWriter, r *http.Request) {
	if !s.barrier(w, r) {
		return
	}
	l, err := s.b.channels.ListChannels(r.Context())
	reply(w)(visible.For(PrincipalFrom(r.Context()), l), err)
}

func (s alertRoutes) getChannel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := model.ValidateName("name", name); err != nil {
		writeError(w, err)
		return
	}
	if !s.barrier(w, r) {
		return
	}
	ch, err := s.b.channels.GetChannel(r.Context(), name)
	reply(w)(visible.For(PrincipalFrom(r.Context()), ch), err)
}

func (s alertRoutes) deleteChannel(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	reply(w)(s.b.channels.DeleteChannel(r.Context(), c, name))
}
