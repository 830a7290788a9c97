// Package filter owns the contract of Facet's data-plane filters: how a
// filter describes itself (name, version, methods, stages, reversibility,
// typed parameters), how it is constructed from validated parameters, and
// how a reversible filter's transform is undone on GET — over any byte
// range, at a cost proportional to the range.
//
// A filter is loaded in three steps (module.go): its parameters decode
// into a typed configuration, which validates them when a policy is
// checked and provisions the ready instance when the policy table
// compiles, so the request path only calls ready instances.
//
// It holds no filter: the native ones live in internal/filter/native, the
// select filter beside its engine in internal/s3select/selectfilter, WASM
// modules in internal/filter/wasm, and the one explicit list of what the
// binary ships in internal/filter/builtin (no init()). So whatever
// consumes the contract (the policy checker, the data plane) links none of
// them.
package filter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
)

// Stage is a point in a request's path where filters run.
type Stage string

// The stages. The sources call them "proxy" and "object server".
const (
	StageGateway Stage = "gateway"
	StageStorage Stage = "storage"
)

// Method is the request kind a filter acts on.
type Method string

// The methods.
const (
	MethodPut Method = "PUT"
	MethodGet Method = "GET"
	// MethodDelete is for filters that act on the removal of an object
	// (the recycle bin); they never see a stream.
	MethodDelete Method = "DELETE"
)

// ParamType is the type of a filter parameter.
type ParamType string

// Parameter types. Values are given as DSL literals: a Size accepts
// units (512KB, 1.5GiB), a Rate bytes per second (10MB/s), a Duration
// (300ms), a Percent (5%).
const (
	TypeString   ParamType = "string"
	TypeInt      ParamType = "int"
	TypeBool     ParamType = "bool"
	TypeEnum     ParamType = "enum"
	TypeSize     ParamType = "size"
	TypeRate     ParamType = "rate"
	TypeDuration ParamType = "duration"
	TypePercent  ParamType = "percent"
)

// ParamSpec declares one parameter.
type ParamSpec struct {
	Name    string    `json:"name"`
	Type    ParamType `json:"type"`
	Default string    `json:"default,omitempty"`
	// Min and Max bound numeric types (inclusive) when Max > Min.
	Min  float64  `json:"min,omitempty"`
	Max  float64  `json:"max,omitempty"`
	Enum []string `json:"enum,omitempty"`
	Doc  string   `json:"doc,omitempty"`
}

// Params are a filter instance's parameters, validated and with defaults
// applied, as canonical strings (sizes in bytes, rates in bytes/s,
// durations in Go syntax, percents as fractions 0..1).
type Params map[string]string

// Info describes a filter; it is what the registry lists and what the
// policy compiler validates against.
type Info struct {
	Name       string      `json:"name"`
	Version    int         `json:"version"`
	Kind       string      `json:"kind"` // "native" or "wasm"
	Methods    []Method    `json:"methods"`
	Stages     []Stage     `json:"stages"`
	Reversible bool        `json:"reversible"`
	Params     []ParamSpec `json:"params"`
	Doc        string      `json:"doc,omitempty"`
	// Owner is the tenant whose policies alone may use the filter; empty
	// for native filters and an administrator's (the marketplace).
	Owner string `json:"owner,omitempty"`
	// Config returns a new, empty typed configuration (a pointer to a
	// struct with `param` tags, see Decode): the first step of the
	// filter's life cycle (module.go).
	Config func() Provisioner `json:"-"`
}

// Env is what a filter instance may use from its host.
type Env struct {
	// Keys resolves data keys for encryption filters; nil when none.
	Keys KeyProvider
}

// KeyProvider gives a tenant's data keys. Key ids are recorded in object
// metadata; keys never are.
type KeyProvider interface {
	// CurrentKey returns the key id and 32-byte key new objects of tenant
	// are sealed with.
	CurrentKey(ctx context.Context, tenant string) (keyID string, key []byte, err error)
	// Key returns the key with the given id, for reading older objects.
	Key(ctx context.Context, tenant, keyID string) ([]byte, error)
}

// Request is what a filter knows about the request it runs in.
type Request struct {
	Tenant string
	Bucket string
	Key    string
	Method Method
	// Size is the logical size of the body, or -1 when unknown.
	Size int64
	// Header holds the client's relevant request headers (x-amz-meta-*,
	// Content-Type, x-facet-param-*).
	Header map[string]string
}

// Filter is a filter instance.
type Filter interface {
	Info() *Info
}

// Transformer is a filter that rewrites a stream without needing to be
// undone (PUT-side validation, GET-side watermarking...). It returns the
// stream to pass on.
type Transformer interface {
	Filter
	Transform(ctx context.Context, req *Request, in io.Reader) (io.Reader, error)
}

// Record is what a reversible filter writes into the object's metadata to
// be undone later: its name and version and the parameters needed to
// reverse it (never a key). It is encoded strictly, as JSON.
type Record struct {
	Filter  string            `json:"f"`
	Version int               `json:"v"`
	Params  map[string]string `json:"p,omitempty"`
	// Size is the number of bytes this filter produced (its output).
	Size int64 `json:"n"`
}

// Encoder is the forward side of a reversible filter. Encode returns the
// transformed stream; once that stream has returned io.EOF, record returns
// how to undo it. Encoders stream: they never hold a whole object.
type Encoder interface {
	Filter
	Encode(ctx context.Context, req *Request, plain io.Reader) (encoded io.Reader, record func() (Record, error), err error)
}

// Source is a random-access view of a byte stream: the stored object, or
// the output of the layer below once decoded.
type Source interface {
	Size() int64
	// Open returns bytes [off, off+n) of the stream.
	Open(ctx context.Context, off, n int64) (io.ReadCloser, error)
}

// Decoder is the reverse side. Decode returns the decoded view of src;
// opening a range of it must read only the part of src that range needs
// (seekable formats: independent frames with an index, chunked AEAD).
type Decoder interface {
	Decode(ctx context.Context, req *Request, rec Record, src Source) (Source, error)
}

// Reversible is a filter whose transform is undone on GET.
type Reversible interface {
	Encoder
	Decoder
}

// MetaEditor is a filter that acts on a PUT's user metadata rather than on
// its bytes (tagging, the metadata guard). meta holds the x-amz-meta-*
// values keyed by the lower-case suffix; EditMeta may change it or refuse
// the request with a *Refusal. When Peek is 0, EditMeta runs before the
// body is read, with head nil; otherwise it runs once the body has ended
// and before the object becomes visible, with up to Peek leading bytes.
type MetaEditor interface {
	Filter
	Peek() int
	EditMeta(ctx context.Context, req *Request, head []byte, meta map[string]string) error
}

// RequestOnly marks a filter that acts on the request rather than on its
// stream (caching, tagging, the metadata guard, the recycle bin): a PUT
// pipeline passes it by, and the data plane runs it (dataplane.Plane).
type RequestOnly interface {
	Filter
	RequestOnly()
}

// CacheSettings are what a caching filter tells the data plane, which
// drives the node's cache store with them.
type CacheSettings struct {
	// Size bounds the bytes this policy may keep on the node's disk.
	Size int64
	// Evict is "lru" or "lfu".
	Evict string
	// AdmitGet and AdmitPut say which requests fill the cache: a GET
	// that read the whole object, or a PUT's body.
	AdmitGet, AdmitPut bool
}

// Refusal is a filter's refusal of a request because of what the client
// sent: the S3 front end answers it as 400 InvalidArgument with Message,
// and nothing is stored.
type Refusal struct {
	Filter  string
	Message string
}

func (r *Refusal) Error() string { return r.Filter + ": " + r.Message }

// ErrIntegrity is wrapped by decoders when stored bytes fail
// authentication or do not parse: a GET must fail, never return wrong data.
var ErrIntegrity = errors.New("stored data failed integrity check")

// Failure is implemented by the errors of a filter that failed on its own
// (a sandboxed module that trapped, looped, flooded...): the S3 front end
// answers them with an error naming the filter and the reason. Their
// message must quote neither the data nor the filter's parameters.
type Failure interface {
	error
	FailedFilter() string
	FailureReason() string
}

// Registry holds filter descriptions by name. Registering a name twice is
// a programming error and panics, as in Caddy.
type Registry struct {
	byName map[string]*Info
}

// NewRegistry returns a registry holding infos.
func NewRegistry(infos ...*Info) *Registry {
	r := &Registry{byName: map[string]*Info{}}
	for _, in := range infos {
		r.Register(in)
	}
	return r
}

// Register adds a filter description.
func (r *Registry) Register(in *Info) {
	if _, dup := r.byName[in.Name]; dup {
		panic(fmt.Sprintf("filter %q registered twice", in.Name))
	}
	r.byName[in.Name] = in
}

// Extend returns a new registry holding r's filters and infos, for a
// generation of run-time registered filters; r is unchanged. A name that
// r already holds is refused.
func (r *Registry) Extend(infos ...*Info) (*Registry, error) {
	out := &Registry{byName: make(map[string]*Info, len(r.byName)+len(infos))}
	for n, in := range r.byName {
		out.byName[n] = in
	}
	for _, in := range infos {
		if _, dup := out.byName[in.Name]; dup {
			return nil, fmt.Errorf("filter %q is already registered", in.Name)
		}
		out.byName[in.Name] = in
	}
	return out, nil
}

// Lookup returns the filter named name.
func (r *Registry) Lookup(name string) (*Info, bool) {
	in, ok := r.byName[name]
	return in, ok
}

// Names lists registered filters in name order.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
