package policy

import (
	"github.com/facet-sds/facet/internal/filter"
)

// Pos is a byte offset into the text a policy was parsed from.
type Pos int

// source is the text policies were parsed from, kept so that later passes
// (Check) can point back into it.
type source struct {
	name string
	text string
}

// TargetKind is what a target names.
type TargetKind int

// Target kinds. TargetAll is the ALL target; its Scope says of what.
const (
	TargetTenant TargetKind = iota + 1
	TargetBucket
	TargetObject
	TargetGroup
	TargetVolume
	TargetAll
)

// MarshalText renders the kind by name in JSON.
func (k TargetKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k TargetKind) String() string {
	switch k {
	case TargetTenant:
		return "tenant"
	case TargetBucket:
		return "bucket"
	case TargetObject:
		return "object"
	case TargetGroup:
		return "group"
	case TargetVolume:
		return "volume"
	case TargetAll:
		return "all"
	}
	return "unknown"
}

// Policy is one parsed policy. The fields after the comment "Set by Check"
// are filled in by Check; Compile refuses policies that were not checked.
type Policy struct {
	Pos  Pos // start of the policy (its name, or FOR)
	Line int // line of Pos, 1-based
	// ID identifies the policy to the caller (the metadata store's id). The
	// parser leaves it empty; Compile defaults an empty ID to Name, or to
	// "#N" for the N-th policy given.
	ID      string
	Name    string // optional "name:" prefix
	NamePos Pos
	// Text is the policy's source text, as written.
	Text    string
	Targets []*Target
	// Context is the request class after CONTEXT ("" without): the
	// policy's SLOs apply to that class of its tenants' requests only
	// (flows are tenant × class).
	Context    string
	ContextPos Pos
	When       Cond // nil without WHEN
	Actions    []*Action
	To         []*ObjectCmp // the TO list; ANDed
	ToPos      Pos

	src *source

	// Set by Check.
	checked bool
	// Dynamic is true when the policy has a metric term: a controller
	// activates it; it is not in the static table.
	Dynamic bool
	// Trigger is the metric part of When (nil for static policies):
	// controllers evaluate it with EvalMetrics.
	Trigger Cond
	// objPred is the object part of When ANDed with To; nil when none.
	objPred *objPred
}

// Target is one target of a policy.
type Target struct {
	Pos  Pos
	Kind TargetKind
	// Keyword is the kind as written, upper-cased (TENANT, CONTAINER, G, ALL...).
	Keyword string
	// Name is the identifier: a tenant, "tenant/bucket" or a bare bucket
	// name (resolved by the caller), "tenant/bucket/key", a group or a
	// volume. Empty for ALL.
	Name    string
	NamePos Pos
	// Scope is what ALL covers (TargetTenant, TargetBucket or TargetVolume),
	// and ScopeWord how it was written ("" for a bare ALL).
	Scope     TargetKind
	ScopeWord string

	// Set by Check: Name split into its parts. A bare bucket target has an
	// empty Tenant.
	Tenant, Bucket, Key string
}

// CmpOp is a comparison operator.
type CmpOp string

// The comparison operators. "==" is read as OpEQ.
const (
	OpLT CmpOp = "<"
	OpLE CmpOp = "<="
	OpGT CmpOp = ">"
	OpGE CmpOp = ">="
	OpEQ CmpOp = "="
	OpNE CmpOp = "!="
)

// Cond is a node of a WHEN condition.
type Cond interface {
	Position() Pos
	String() string
	isCond()
}

// BinaryCond is X AND Y or X OR Y.
type BinaryCond struct {
	Op    string // "AND" or "OR"
	OpPos Pos
	X, Y  Cond
}

// MetricCmp compares a workload metric with a value.
type MetricCmp struct {
	Pos    Pos
	Metric string
	Op     CmpOp
	OpPos  Pos
	Value  Value

	// Set by Check: the metric's canonical name and kind, and Value in the
	// metric's canonical unit (ops/s, bytes/s, bytes, seconds, fraction).
	Info      MetricInfo
	Threshold float64
}

// ObjectField is the object metadata an ObjectCmp looks at.
type ObjectField string

// The object metadata fields.
const (
	FieldType ObjectField = "OBJECT_TYPE"
	FieldSize ObjectField = "OBJECT_SIZE"
	FieldName ObjectField = "OBJECT_NAME"
	FieldTag  ObjectField = "OBJECT_TAG"
)

// ObjectCmp is a condition on the request's object, checked per request.
type ObjectCmp struct {
	Pos   Pos
	Field ObjectField
	Op    CmpOp
	OpPos Pos
	// Value is the type name, the size, the glob or the tag key.
	Value Value
	// TagValue is v in OBJECT_TAG=k:v; nil when only the key is given.
	TagValue *Value

	// Set by Check.
	TypeName string   // canonical object-type name
	Patterns []string // the type's extensions and media types
	Size     int64    // OBJECT_SIZE in bytes
	TagKey   string   // lower-cased, without x-amz-meta-
}

// Value is a literal as written.
type Value struct {
	Pos Pos
	// Raw is the text: a word or number as written, or a quoted string's
	// contents.
	Raw    string
	Quoted bool
	Number bool // lexed as a number (digits and a unit)
}

// Verb is SET or DELETE.
type Verb string

// The verbs.
const (
	VerbSet    Verb = "SET"
	VerbDelete Verb = "DELETE"
)

// Mode is what happens to a triggered action when its trigger stops
// holding.
type Mode string

// The modes. ModeDefault is PERSISTENT.
const (
	ModeDefault    Mode = ""
	ModePersistent Mode = "PERSISTENT"
	ModeTransient  Mode = "TRANSIENT"
)

// SLOKind names the actions that are SLO records rather than filters.
type SLOKind string

// The SLO actions.
const (
	SLOBandwidth SLOKind = "bandwidth" // tenants: get, put, reservation, limit, weight, ops
	SLOThrottle  SLOKind = "throttle"  // volumes: read_bw, write_bw, read_iops, write_iops
	SLOQuota     SLOKind = "quota"     // tenants: bytes, objects, buckets, uploads
)

// Action is one SET or DELETE.
type Action struct {
	Pos       Pos
	Verb      Verb
	Filter    string
	FilterPos Pos
	Params    []*Param
	WithPos   Pos
	// StageWord is the stage as written after ON ("" without ON); Stage its
	// canonical form (proxy = gateway, object = storage).
	StageWord string
	Stage     filter.Stage
	StagePos  Pos
	Mode      Mode
	ModePos   Pos
	Callable  bool
	CallPos   Pos

	// Set by Check.
	Info *filter.Info // the filter; for an SLO action a description of it
	SLO  SLOKind      // non-empty for SLO actions
	// Values are the parameters, canonical, with defaults applied.
	Values filter.Params
}

// Param is name=value in a WITH list.
type Param struct {
	Pos   Pos
	Name  string
	Value Value
}

// Position implements Cond.
func (c *BinaryCond) Position() Pos { return c.X.Position() }

// Position implements Cond.
func (c *MetricCmp) Position() Pos { return c.Pos }

// Position implements Cond.
func (c *ObjectCmp) Position() Pos { return c.Pos }

func (*BinaryCond) isCond() {}
func (*MetricCmp) isCond()  {}
func (*ObjectCmp) isCond()  {}
