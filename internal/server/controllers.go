package server

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/controller"
	"github.com/facet-sds/facet/internal/qos"
)

// newControllers builds the controller supervisor with the global
// controllers and, given a metric feed, the automation reconciler of the
// dynamic policies, supervised like the controllers it starts. Without a
// feed, dynamic policies stay stored as pending. Nothing runs until the
// supervisor's Serve; it returns the source of the control API's
// controller list.
//
// disabled names built-in controllers not to run (Options.
// DisabledControllers); heartbeats, when set, is the bus on which
// out-of-process controllers are heard, to list them.
func newControllers(policies *control.Service, feed control.Feed, obs controller.Observer, logger *slog.Logger,
	disabled []string, heartbeats controller.Subscriber,
	globals ...func(*controller.Supervisor) error) (*controller.Supervisor, admin.ControllerSource, error) {
	if err := CheckDisabledControllers(disabled); err != nil {
		return nil, nil, err
	}
	sup := controller.NewSupervisor(controller.Config{Logger: logger, Observer: obs, Disabled: disabled, Heartbeats: heartbeats})
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

// BuiltinControllers are the names --disable-controller takes: the
// automation controllers of dynamic policies, the QoS bandwidth share,
// and the request-class controller (context/limits or context/priority).
func BuiltinControllers() []string {
	return []string{"automation", qos.ControllerName, "context"}
}

// CheckDisabledControllers refuses a name that is no built-in controller.
func CheckDisabledControllers(names []string) error {
	for _, n := range names {
		if !slices.Contains(BuiltinControllers(), n) {
			return fmt.Errorf("--disable-controller %q: no built-in controller of that name (%s)", n, strings.Join(BuiltinControllers(), ", "))
		}
	}
	return nil
}
