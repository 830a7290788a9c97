package server

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/facet-sds/facet/internal/ui"
)

// mountDashboard serves the administration dashboard (/ui/) on the admin
// listener in front of the control API, and feeds its live plots until
// ctx ends or the listener shuts down (which also ends the dashboards'
// event streams, so that a graceful stop does not wait for them).
func mountDashboard(ctx context.Context, srv *http.Server, api http.Handler, token string, store ui.Store, live ui.Snapshotter, logger *slog.Logger) {
	dash := ui.New(ui.Config{API: api, Token: token, Store: store, Metrics: live, Logger: logger})
	ctx, stop := context.WithCancel(ctx)
	srv.RegisterOnShutdown(stop)
	go dash.Run(ctx)
	srv.Handler = dash.Handler()
}
