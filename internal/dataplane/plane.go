package dataplane

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/cache"
	"github.com/facet-sds/facet/internal/storage"
)

// The entry points a protocol front end calls (DESIGN.md "Protocols are
// front ends"): Get, Put, PutPart, Copy, Delete and Select. A front end
// parses and authenticates its request, maps it onto one of them and
// renders the answer; which GET variant runs, the request filters
// (caching, tagging, the metadata guard, the recycle bin), the object
// cache, GET transforms and select run here, below any protocol. The
// request and result types carry no net/http types.

// RequestFilters resolves the filters in force for a request of any
// method (req.Method): caching, tagging, the metadata guard, the recycle
// bin and GET transforms. control.Service is one.
type RequestFilters interface {
	ForRequest(req *filter.Request) Pipeline
}

// ObjectCache is the node's object cache (internal/filter/cache.Store).
type ObjectCache interface {
	Open(bucket, key string, v cache.Version, off, n int64) (io.ReadCloser, bool)
	Admit(pol cache.Policy, bucket, key string, size int64) *cache.Fill
	// Holds reports whether any version of the object is cached.
	Holds(bucket, key string) bool
}

// Changes hears of every change to an object: the node's cache drops its
// copy and every gateway sharing the bus is told.
type Changes interface {
	Changed(bucket, key string)
}

// Trash is the recycle bin (internal/filter/trash.Store). Delete deletes
// an object and keeps exactly the version it deleted for keepFor (a PUT
// racing the DELETE is kept, or stays); it fails rather than delete a
// version it did not keep, with an error that Busy recognises when the
// object kept changing under its copy.
type Trash interface {
	Delete(ctx context.Context, tenant, bucket, key string, keepFor time.Duration) error
	Busy(err error) bool
}

// Config assembles a Plane.
type Config struct {
	Backend storage.Backend
	// Pipelines resolves PUT filters from memory (the policy table); nil
	// runs none.
	Pipelines PipelineSource
	// Decoders undo the filters recorded in objects' metadata.
	Decoders Decoders
	// RequestFilters resolves caching, tagging, metadata-guard,
	// recycle-bin and GET filters; nil runs none.
	RequestFilters RequestFilters
	// Cache is the node's object cache for caching filters; nil caches
	// nothing.
	Cache ObjectCache
	// Trash keeps deleted objects for the recycle bin; nil keeps none.
	Trash Trash
	// Changes hears of every change to an object; nil tells no one.
	Changes Changes
	Logger  *slog.Logger
}

// Plane moves objects' bytes between a front end and the backend.
type Plane struct {
	backend    storage.Backend
	pipelines  PipelineSource
	decoders   Decoders
	reqFilters RequestFilters
	cache      ObjectCache
	trash      Trash
	changes    Changes
	log        *slog.Logger
	// background counts the work a request leaves behind (cache fills
	// committing off the response's path), so the owner can wait for it
	// before closing the cache it writes to.
	background sync.WaitGroup
}

// New returns a Plane.
func New(cfg Config) *Plane {
	p := &Plane{
		backend: newVersionRouter(cfg.Backend), pipelines: cfg.Pipelines, decoders: cfg.Decoders,
		reqFilters: cfg.RequestFilters, cache: cfg.Cache, trash: cfg.Trash, changes: cfg.Changes, log: cfg.Logger,
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	return p
}

// goBackground runs work that outlives the request that started it and
// counts it for Wait.
func (p *Plane) goBackground(work func()) {
	p.background.Add(1)
	go func() {
		defer p.background.Done()
		work()
	}()
}

// Wait returns once the work requests left behind has finished. The
// owner calls it after the last request has returned and before it closes
// the object cache.
func (p *Plane) Wait() { p.background.Wait() }

// Target is the object a request is for and who asks.
type Target struct {
	Tenant, Bucket, Key string
	// VersionID names the version a read or a delete is for, "" the
	// latest (versions.go).
	VersionID string
	// Context holds the request's own headers filters may read
	// (x-facet-*), by lower-case name, values of a repeated header
	// joined by ",".
	Context map[string]string
}

// filterRequest describes a request to filters and to the policy table.
// The object's content type and user metadata come from obj, what the
// object is or will be: an upload part or a copy does not carry them in
// its own headers.
func (t Target) filterRequest(method filter.Method, size int64, obj storage.ObjectMeta) *filter.Request {
	h := make(map[string]string, len(t.Context)+len(obj.UserMeta)+1)
	for k, v := range t.Context {
		h[k] = v
	}
	if obj.ContentType != "" {
		h["content-type"] = obj.ContentType
	}
	for k, v := range obj.UserMeta {
		h["x-amz-meta-"+k] = v
	}
	return &filter.Request{Tenant: t.Tenant, Bucket: t.Bucket, Key: t.Key, Method: method, Size: size, Header: h}
}

// ContextHeaders picks the headers filters may read out of a request's
// headers (x-facet-*), as Target.Context holds them.
func ContextHeaders(header map[string][]string) map[string]string {
	h := map[string]string{}
	for k, v := range header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-facet-") {
			h[lk] = strings.Join(v, ",")
		}
	}
	return h
}

// changed reports a change to an object, successful or not (a write the
// backend committed may still report an error), before the client is
// answered. Correctness does not rest on it (package cache says why);
// it frees dead entries on every gateway at once.
func (p *Plane) changed(bucket, key string) {
	if p.changes != nil {
		p.changes.Changed(bucket, key)
	}
}

// requestSteps returns the filters in force for t's object and method.
func (p *Plane) requestSteps(t Target, method filter.Method, size int64, obj storage.ObjectMeta) []Step {
	if p.reqFilters == nil {
		return nil
	}
	return p.reqFilters.ForRequest(t.filterRequest(method, size, obj)).Steps
}

// writeContext is the context for a backend write. It is not cancelled
// when the client's connection ends: net/http cancels a request's context
// as soon as the client half-closes, which may come after the whole body
// arrived. A client that leaves mid-body still aborts the write, because
// reading the body then fails.
func writeContext(ctx context.Context) context.Context {
	return context.WithoutCancel(ctx)
}
