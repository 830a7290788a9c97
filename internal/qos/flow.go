package qos

import (
	"fmt"
	"net/http"
	"strings"
)

// Class is the kind of work a flow carries. Each class of a tenant has its
// own buckets and its own rate on every node.
type Class string

// The flow classes.
const (
	ClassGet    Class = "get"    // reads: GET, HEAD, listings
	ClassPut    Class = "put"    // writes: PUT, POST (uploads, multipart)
	ClassDelete Class = "delete" // deletions (operations only: no bytes)
	// ClassBackground is Facet's own work on a tenant's behalf (multipart
	// cleanup, later cache fills and rebalancing), capped by policies
	// like Crystal capped replication.
	ClassBackground Class = "background"
)

// Classes lists every class in a stable order.
var Classes = []Class{ClassGet, ClassPut, ClassDelete, ClassBackground}

// ClassOf maps an HTTP method to its class.
func ClassOf(method string) Class {
	switch method {
	case http.MethodPut, http.MethodPost:
		return ClassPut
	case http.MethodDelete:
		return ClassDelete
	default:
		return ClassGet
	}
}

// ParseClass parses a class name: one of Classes, or a context class
// ("ctx:" and a valid class name).
func ParseClass(s string) (Class, error) {
	for _, c := range Classes {
		if string(c) == s {
			return c, nil
		}
	}
	if name, ok := strings.CutPrefix(s, contextPrefix); ok && ValidClassName(name) {
		return Class(s), nil
	}
	return "", fmt.Errorf("qos: unknown class %q (want get, put, delete, background or ctx:NAME)", s)
}

// contextPrefix marks the classes requests name in their application
// context (x-facet-context, internal/flowctx).
const contextPrefix = "ctx:"

// ContextClass is the flow class of a request whose application context
// names class name, for classes an SLO (a CONTEXT policy) governs: such a
// class is a flow of its own, tenant × class, in the limiter and in the
// global controller's allocation, whatever the operation.
func ContextClass(name string) Class { return Class(contextPrefix + name) }

// Context returns the context class's name; false for the operation
// classes.
func (c Class) Context() (string, bool) { return strings.CutPrefix(string(c), contextPrefix) }

// maxClassName is the longest context class name.
const maxClassName = 63

// ValidClassName reports whether s is a context class name: 1-63
// characters [a-z0-9][a-z0-9_.-]*.
func ValidClassName(s string) bool {
	if s == "" || len(s) > maxClassName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '_' || c == '.' || c == '-')) {
			return false
		}
	}
	return true
}

// Key is the bandwidth key of a class in controller assignments and bus
// reports: "get_bw", "put_bw", ...
func (c Class) Key() string { return string(c) + "_bw" }

// OpsKey is the operations key of a class in controller assignments:
// "get_ops", "put_ops", ...
func (c Class) OpsKey() string { return string(c) + "_ops" }

// StageGateway is the stage at which the S3 front end enforces flows. The
// block stage and storage-side enforcement use their own stage names.
const StageGateway = "gateway"

// FlowID names a flow on one node: tenant × class × node × stage.
type FlowID struct {
	Tenant string `json:"tenant"`
	Class  Class  `json:"class"`
	Node   string `json:"node"`
	Stage  string `json:"stage"`
}

func (f FlowID) String() string {
	return f.Tenant + "/" + string(f.Class) + "@" + f.Node + "/" + f.Stage
}
