package agent

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
)

// servePprof serves Go's profiles (/debug/pprof/) on cfg.PprofAddr, if
// set, under the rules of the API: TLS when the node has certificates,
// the loopback rule of checkTransportSecurity, and the admin role (or the
// management token): a heap profile holds whatever the process holds,
// secrets included. The command line (/debug/pprof/cmdline, which may
// hold -token) is not served.
func (a *Agent) servePprof() error {
	if a.cfg.PprofAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", a.cfg.PprofAddr)
	if err != nil {
		return fmt.Errorf("agent: -pprof: listen on %s: %w", a.cfg.PprofAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	a.pprof = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, err := a.acc.Authenticate(r)
			if err == nil && !id.Principal.Can(model.RoleAdmin) {
				err = &model.Error{Code: model.CodeForbidden, Message: "token " + id.Principal.Name + " (role " + id.Principal.Role +
					") may not read profiles: it needs role admin"}
			}
			if err != nil {
				api.WriteError(w, err)
				return
			}
			mux.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          newServerLog(a.log),
	}
	go func() {
		if err := a.pprof.Serve(tlsListener(ln, a.cfg.TLS)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("pprof server stopped", "error", err)
		}
	}()
	a.log.Info("serving profiles (admin only)", "pprof", ln.Addr().String())
	return nil
}
