package server

import (
	"context"
	"net/http"

	"github.com/facet-sds/facet/internal/ui"
)

// mountDashboard serves the administration dashboard (/ui/) on the admin
// listener in front of the control API, and feeds its live plots from
// Start until Shutdown or the listener shuts down (which also ends the
// dashboards' event streams, so that a graceful stop does not wait for
// them).
func (s *Server) mountDashboard(srv *http.Server, api http.Handler, token string, store ui.Store, live ui.Snapshotter, audit ui.Auditor) {
	dash := ui.New(ui.Config{API: api, Token: token, Store: store, Metrics: live, Logger: s.log, Audit: audit})
	ctx, stop := context.WithCancel(s.ctx)
	srv.RegisterOnShutdown(stop)
	s.later("dashboard", func(context.Context) { dash.Run(ctx) })
	srv.Handler = dash.Handler()
}
