package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/admit"
	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/controller"
	"github.com/facet-sds/facet/internal/flowctx"
	"github.com/facet-sds/facet/internal/meta"
)

// ContextOptions configure request classes (internal/flowctx): which
// controller sets the rates of tenant × class flows.
type ContextOptions struct {
	// Controller is flowctx.ControllerLimits (policies' CONTEXT limits)
	// or flowctx.ControllerPriority (SILK-like).
	Controller string
	// Background, Threshold, Capacity and Floor configure the priority
	// controller (flowctx.PriorityConfig).
	Background []string
	Threshold  float64
	Capacity   float64
	Floor      float64
	// Period is the controller's period (default 1 s).
	Period time.Duration
}

// contextRuntime is the gateway's request classification: the tenants'
// rules in memory, and the enforcer of class flows in front of the QoS
// limiter.
type contextRuntime struct {
	store    *meta.Store
	registry *flowctx.Registry
	enforcer *flowctx.Enforcer
	ctrl     string
}

// newContext builds the request classification; its rules are reloaded
// from Start. limits are the classes' SLOs (API class records over
// CONTEXT policies, control.SLOCache.ClassLimits).
func (s *Server) newContext(ctx context.Context, opts ContextOptions, store *meta.Store, limits flowctx.LimitSource, next admit.QoS) (*contextRuntime, error) {
	logger := s.log
	if opts.Controller == "" {
		opts.Controller = flowctx.ControllerLimits
	}
	if !slices.Contains(flowctx.Controllers, opts.Controller) {
		return nil, fmt.Errorf("context controller %q: want one of %v", opts.Controller, flowctx.Controllers)
	}
	if opts.Controller == flowctx.ControllerPriority && (len(opts.Background) == 0 || opts.Capacity <= 0) {
		return nil, errors.New("the priority controller needs --context-background classes and --context-capacity")
	}
	reg := flowctx.NewRegistry(store, logger)
	if err := reg.Reload(ctx); err != nil {
		return nil, fmt.Errorf("load context rules: %w", err)
	}
	s.later("context rules", func(ctx context.Context) { reg.Run(ctx, time.Second) })
	enf := flowctx.NewEnforcer(flowctx.EnforcerConfig{
		Rules:      reg.Rules,
		Limits:     limits,
		Controller: opts.Controller,
		Priority:   flowctx.PriorityConfig{Background: opts.Background, Threshold: opts.Threshold, Capacity: opts.Capacity, Floor: opts.Floor},
		Period:     opts.Period,
		Next:       next,
		Logger:     logger,
	})
	// The class controller runs under the controller supervisor
	// (supervised()), on every gateway: it enforces locally.
	logger.Info("request classes", "controller", opts.Controller)
	return &contextRuntime{store: store, registry: reg, enforcer: enf, ctrl: opts.Controller}, nil
}

// api is the control API's request-class service.
func (c *contextRuntime) api() admin.ContextService {
	return control.NewContextRules(c.store, c.registry, c.enforcer)
}

// supervised adds the class controller to the supervisor, so that it is
// restarted if it fails and listed with the other controllers
// (GET /v1/controllers) as context/limits or context/priority.
func (c *contextRuntime) supervised() func(*controller.Supervisor) error {
	return func(sup *controller.Supervisor) error {
		return sup.Add("context/"+c.ctrl, controller.KindGlobal, "", classController{c.enforcer})
	}
}

// classController is the enforcer's control loop as a supervised service.
type classController struct{ e *flowctx.Enforcer }

func (cc classController) Serve(ctx context.Context) error {
	cc.e.Run(ctx)
	return ctx.Err()
}

// Report shows each class flow's rate in force and measured bandwidth.
func (cc classController) Report() controller.Report {
	r := controller.Report{Active: true, LastEval: cc.e.LastStep(), Reason: "tenant x class flows, controller " + cc.e.Controller()}
	for _, f := range cc.e.Flows() {
		target := "tenant:" + f.Tenant + "/class:" + f.Class
		r.Targets = append(r.Targets, target)
		r.Values = append(r.Values, controller.Value{Target: target, Metric: "measured_bps", Value: f.Measured, Period: r.LastEval})
		if !f.Unlimited {
			r.Values = append(r.Values, controller.Value{Target: target, Metric: "rate_bps", Value: f.Rate, Period: r.LastEval})
		}
	}
	return r
}
