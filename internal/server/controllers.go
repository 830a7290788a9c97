package server

import (
	"log/slog"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/controller"
)

// newControllers builds the controller supervisor with the global
// controllers and, given a metric feed, the automation reconciler of the
// dynamic policies, supervised like the controllers it starts. Without a
// feed, dynamic policies stay stored as pending. Nothing runs until the
// supervisor's Serve; it returns the source of the control API's
// controller list.
func newControllers(policies *control.Service, feed control.Feed, obs controller.Observer, logger *slog.Logger,
	globals ...func(*controller.Supervisor) error) (*controller.Supervisor, admin.ControllerSource, error) {
	sup := controller.NewSupervisor(controller.Config{Logger: logger, Observer: obs})
	// Global controllers (the bandwidth share) run under the same
	// supervisor.
	for _, add := range globals {
		if add == nil { // a role built without that controller
			continue
		}
		if err := add(sup); err != nil {
			return nil, nil, err
		}
	}
	if feed != nil {
		auto, err := control.NewAutomation(policies, control.AutomationConfig{Feed: feed, Supervisor: sup, Logger: logger})
		if err != nil {
			return nil, nil, err
		}
		sup.Supervise("automation", auto)
	}
	return sup, control.ControllerSource(sup), nil
}
