package control

import (
	"context"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/controller"
)

// ControllerSource serves the control API's controller list from a
// supervisor: automation and global controllers alike.
func ControllerSource(sup *controller.Supervisor) admin.ControllerSource {
	return controllerSource{sup}
}

type controllerSource struct{ sup *controller.Supervisor }

func (c controllerSource) Controllers(context.Context) ([]admin.ControllerStatus, error) {
	sts := c.sup.Status()
	out := make([]admin.ControllerStatus, 0, len(sts))
	for _, st := range sts {
		cs := admin.ControllerStatus{
			ID: st.ID, Kind: string(st.Kind), Policy: st.Policy, State: string(st.State), Active: st.Active,
			Restarts: st.Restarts, LastFailure: st.LastFailure, Targets: st.Targets, Reason: st.Reason, LastError: st.LastError,
		}
		if !st.LastEval.IsZero() {
			t := st.LastEval.UTC()
			cs.LastEvaluation = &t
		}
		if !st.LastSeen.IsZero() {
			t := st.LastSeen.UTC()
			cs.Instance, cs.LastSeen = st.Instance, &t
		}
		for _, v := range st.Values {
			cs.Values = append(cs.Values, admin.ControllerValue{Target: v.Target, Metric: v.Metric, Value: v.Value, Period: v.Period.UTC()})
		}
		out = append(out, cs)
	}
	return out, nil
}
