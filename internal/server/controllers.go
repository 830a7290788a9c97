package server

import (
	"context"
	"log/slog"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/controller"
)

// startControllers runs the controller supervisor until ctx ends and,
// given a metric feed, the automation controllers of the dynamic policies
// under it. Without a feed, dynamic policies stay stored as pending. It
// returns the source of the control API's controller list.
func startControllers(ctx context.Context, policies *control.Service, feed control.Feed, obs controller.Observer, logger *slog.Logger,
	globals ...func(*controller.Supervisor) error) (admin.ControllerSource, error) {
	sup := controller.NewSupervisor(controller.Config{Logger: logger, Observer: obs})
	// Global controllers (the bandwidth share) run under the same
	// supervisor.
	for _, add := range globals {
		if add == nil { // a role built without that controller
			continue
		}
		if err := add(sup); err != nil {
			return nil, err
		}
	}
	if feed != nil {
		auto, err := control.NewAutomation(policies, control.AutomationConfig{Feed: feed, Supervisor: sup, Logger: logger})
		if err != nil {
			return nil, err
		}
		go func() { _ = auto.Serve(ctx) }()
	}
	go func() {
		if err := sup.Serve(ctx); err != nil {
			logger.Error("controller supervisor stopped", "err", err)
		}
	}()
	return control.ControllerSource(sup), nil
}
