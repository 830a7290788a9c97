package server

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/audit"
)

// AuditOptions configures the audit log (internal/audit).
type AuditOptions struct {
	// Path is the file ("-": stdout); empty: no audit log.
	Path string
	// MaxSize rotates the file before it passes this many bytes.
	MaxSize int64
	// Keep is how many rotated files are kept.
	Keep int
}

// openAudit opens the audit log when one is configured and registers its
// metrics on reg (nil: a role that exposes no metrics); nil when none is. It is closed after the listeners
// have drained, so the last requests' lines are written.
func (s *Server) openAudit(reg prometheus.Registerer) (*audit.Log, error) {
	ao := s.opts.Audit
	if ao.Path == "" {
		return nil, nil
	}
	l, err := audit.Open(audit.Config{Path: ao.Path, MaxSize: ao.MaxSize, Keep: ao.Keep, Logger: s.log.With("stage", "audit")})
	if err != nil {
		return nil, err
	}
	for _, c := range l.Collectors() {
		if reg == nil {
			break
		}
		if err := reg.Register(c); err != nil {
			l.Close()
			return nil, fmt.Errorf("audit metrics: %w", err)
		}
	}
	s.closeLater("audit log", l.Close)
	s.log.Info("audit log", "path", ao.Path, "max_size", ao.MaxSize, "keep", ao.Keep)
	return l, nil
}

// adminAudit is l as the admin API's AuditLog: nil, not a nil *audit.Log,
// when there is none.
func adminAudit(l *audit.Log) admin.AuditLog {
	if l == nil {
		return nil
	}
	return l
}
