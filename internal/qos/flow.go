package qos

import (
	"fmt"
	"net/http"
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

// ParseClass parses a class name.
func ParseClass(s string) (Class, error) {
	for _, c := range Classes {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("qos: unknown class %q (want get, put, delete or background)", s)
}

// Key is the bandwidth key of a class in controller assignments and bus
// reports: "get_bw", "put_bw", ...
func (c Class) Key() string { return string(c) + "_bw" }

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
