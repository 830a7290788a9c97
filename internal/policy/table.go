package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
)

// Query is what the data plane knows about a request when it resolves the
// request's pipeline.
type Query struct {
	Tenant, Bucket, Key string
	// Size is the declared (logical) size; negative when unknown.
	Size        int64
	ContentType string
	// Tags is the user metadata: keys lower-cased, without x-amz-meta-.
	Tags map[string]string
	// Method selects the filters that run on it; "" selects every filter.
	Method filter.Method
}

// Level is how specific a target is. Higher wins.
type Level int

// The levels, least specific first. LevelVolume is only compared with
// LevelAll (ALL VOLUMES).
const (
	LevelAll Level = iota
	LevelGroup
	LevelTenant
	LevelBucket
	LevelObject
	LevelVolume
)

// MarshalText renders the level by name in JSON.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

func (l Level) String() string {
	switch l {
	case LevelAll:
		return "all"
	case LevelGroup:
		return "group"
	case LevelTenant:
		return "tenant"
	case LevelBucket:
		return "bucket"
	case LevelObject:
		return "object"
	case LevelVolume:
		return "volume"
	}
	return "unknown"
}

// Step is one filter of a resolved pipeline and where it came from.
// Params is shared by every request: never modify it.
type Step struct {
	Filter     string        `json:"filter"`
	Params     filter.Params `json:"params,omitempty"`
	Stage      filter.Stage  `json:"stage,omitempty"`
	Callable   bool          `json:"callable,omitempty"`
	PolicyID   string        `json:"policyId"`
	PolicyName string        `json:"policyName,omitempty"`
	Line       int           `json:"line"`
	Target     string        `json:"target"` // the policy's target as written: "TENANT t1", "GROUP g1", "ALL"
	Level      Level         `json:"level"`
	Info       *filter.Info  `json:"-"`
	// Instance is the ready filter the host provisioned for the step when
	// the table compiled (Compiled.Provision); nil for block filters and
	// before provisioning.
	Instance filter.Filter `json:"-"`
}

// Resolution is a request's pipeline: the steps per stage, in order.
type Resolution struct {
	Gateway []Step `json:"gateway"`
	Storage []Step `json:"storage"`
}

// Stage returns the steps of stage s.
func (r Resolution) Stage(s filter.Stage) []Step {
	switch s {
	case filter.StageGateway:
		return r.Gateway
	case filter.StageStorage:
		return r.Storage
	}
	return nil
}

// Len is the number of steps.
func (r Resolution) Len() int { return len(r.Gateway) + len(r.Storage) }

// PolicyRef names a policy in warnings and explanations.
type PolicyRef struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	Line int    `json:"line"`
}

func (r PolicyRef) String() string { return fmt.Sprintf("policy %s (line %d)", r.ID, r.Line) }

// SLO is an SLO record compiled from SET/DELETE bandwidth (per tenant) or
// SET/DELETE throttle (per volume).
type SLO struct {
	Kind   SLOKind       `json:"kind"`
	Delete bool          `json:"delete,omitempty"`
	Params filter.Params `json:"params,omitempty"` // canonical: rates in bytes/s, ops in ops/s
	// Target is the tenant or volume; "" for ALL.
	Target string `json:"target,omitempty"`
	// Context is the request class a bandwidth record applies to; ""
	// for the tenant's SLO (all its classes together).
	Context    string `json:"context,omitempty"`
	Level      Level  `json:"level"`
	Group      string `json:"group,omitempty"` // the group the tenant was reached through, if any
	PolicyID   string `json:"policyId"`
	PolicyName string `json:"policyName,omitempty"`
	Line       int    `json:"line"`
	Dynamic    bool   `json:"dynamic,omitempty"`
}

// CompiledPolicy is a policy as the compiler keeps it.
type CompiledPolicy struct {
	ID      string
	Policy  *Policy
	Dynamic bool
	// Trigger is the metric part of the condition (nil when static);
	// controllers evaluate it with EvalMetrics.
	Trigger Cond
	// Metrics are the canonical names of the metrics Trigger reads, sorted.
	Metrics []string

	pred *objPred // the object condition, shared with identical ones
}

// Ref returns the policy's reference.
func (p *CompiledPolicy) Ref() PolicyRef {
	return PolicyRef{ID: p.ID, Name: p.Policy.Name, Line: p.Policy.Line}
}

// Compiled is the output of Compile: every policy's entries, static and
// dynamic, from which Tables are built.
type Compiled struct {
	Policies []*CompiledPolicy // in the order given
	Warnings []Warning

	entries []*entry    // filter entries in declaration order
	slos    []*sloEntry // SLO entries in declaration order
	byID    map[string]int
	filters []string // filter names by id
	static  *Table
	rules   []OrderRule
	groups  map[string][]string
}

// entry is one action of one policy for one target (a group target gives
// one entry per member).
type entry struct {
	step  Step
	fid   int
	del   bool
	level Level
	decl  int // declaration order: (policy, action), shared by an action's targets
	pidx  int
	pred  *objPred
	// Scope. LevelGroup: tenant (and bucket for a bucket member);
	// LevelTenant: tenant; LevelBucket: bucket (tenant "" when bare);
	// LevelObject: all three. Volume entries have vol set.
	tenant, bucket, key string
	group               string
	vol                 bool
	volume              string
}

type sloEntry struct {
	SLO
	decl int
	pidx int
}

type bucketKey struct{ tenant, bucket string }

type objectKey struct{ tenant, bucket, key string }

// outranks reports whether e beats cur for the same filter.
func (e *entry) outranks(cur *entry) bool {
	return e.level > cur.level || e.level == cur.level && e.decl > cur.decl
}

func (e *entry) methodOK(m filter.Method) bool {
	return m == "" || e.step.Info == nil || runsOn(e.step.Info, m)
}

// matches reports whether e's target covers q (conditions aside).
func (e *entry) matches(q *Query) bool {
	if e.vol {
		return false
	}
	switch e.level {
	case LevelAll:
		return true
	case LevelGroup, LevelTenant:
		return e.tenant == q.Tenant && (e.bucket == "" || e.bucket == q.Bucket)
	case LevelBucket:
		return e.bucket == q.Bucket && (e.tenant == "" || e.tenant == q.Tenant)
	case LevelObject:
		return e.tenant == q.Tenant && e.bucket == q.Bucket && e.key == q.Key
	}
	return false
}

// Option configures Compile.
type Option func(*Compiled)

// OrderRule says that filter First must run before filter Then on PUT;
// Why says what goes wrong otherwise.
type OrderRule struct {
	First, Then string
	Why         string
}

// DefaultOrderRules returns the order rules Compile warns about by
// default. It returns a new slice on every call.
func DefaultOrderRules() []OrderRule {
	return []OrderRule{
		{First: "compression", Then: "encryption", Why: "encrypted data does not compress"},
	}
}

// WithOrderRules replaces the default order rules.
func WithOrderRules(rules ...OrderRule) Option {
	return func(c *Compiled) { c.rules = append([]OrderRule(nil), rules...) }
}

// Compile turns checked policies, in declaration order, into lookup
// tables. groups maps a group name to its members, each "tenant" or
// "tenant/bucket". Policies with an empty ID get their Name, or "#N" for
// the N-th policy (1-based); IDs must be unique. The result refers to the
// policies: do not modify or re-check them afterwards.
func Compile(policies []*Policy, groups map[string][]string, opts ...Option) (*Compiled, error) {
	c := &Compiled{byID: map[string]int{}, rules: DefaultOrderRules(), groups: map[string][]string{}}
	for _, o := range opts {
		o(c)
	}
	for g, members := range groups {
		for _, m := range members {
			parts := strings.Split(m, "/")
			if len(parts) > 2 || parts[0] == "" || len(parts) == 2 && parts[1] == "" {
				return nil, fmt.Errorf("policy: group %q: member %q is neither TENANT nor TENANT/BUCKET", g, m)
			}
		}
		c.groups[g] = append([]string(nil), members...)
	}
	fids := map[string]int{}
	preds := map[string]*objPred{} // identical conditions share one predicate
	decl := 0
	for i, p := range policies {
		if p == nil || !p.checked {
			return nil, fmt.Errorf("policy: policy %d was not checked", i+1)
		}
		id := p.ID
		if id == "" {
			id = p.Name
		}
		if id == "" {
			id = fmt.Sprintf("#%d", i+1)
		}
		if _, dup := c.byID[id]; dup {
			return nil, fmt.Errorf("policy: duplicate policy id %q", id)
		}
		c.byID[id] = i
		cp := &CompiledPolicy{ID: id, Policy: p, Dynamic: p.Dynamic, Trigger: p.Trigger, Metrics: triggerMetrics(p.Trigger)}
		if p.objPred != nil {
			k := p.objPred.key()
			if _, ok := preds[k]; !ok {
				preds[k] = p.objPred
			}
			cp.pred = preds[k]
		}
		c.Policies = append(c.Policies, cp)
		for _, a := range p.Actions {
			decl++
			if a.SLO != "" {
				c.addSLO(cp, i, decl, a)
				continue
			}
			fid, ok := fids[a.Info.Name]
			if !ok {
				fid = len(c.filters)
				fids[a.Info.Name] = fid
				c.filters = append(c.filters, a.Info.Name)
			}
			for _, t := range p.Targets {
				c.addEntries(cp, i, decl, fid, a, t)
			}
		}
	}
	c.static = c.build(nil)
	c.Warnings = c.warnings()
	return c, nil
}

func triggerMetrics(c Cond) []string {
	set := map[string]bool{}
	walkMetrics(c, func(m *MetricCmp) { set[m.Info.Name] = true })
	out := make([]string, 0, len(set))
	for m := range set {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// walkMetrics calls fn on the metric comparisons of c, left to right.
func walkMetrics(c Cond, fn func(*MetricCmp)) {
	switch c := c.(type) {
	case *BinaryCond:
		walkMetrics(c.X, fn)
		walkMetrics(c.Y, fn)
	case *MetricCmp:
		fn(c)
	}
}

func (c *Compiled) addEntries(cp *CompiledPolicy, pidx, decl, fid int, a *Action, t *Target) {
	p := cp.Policy
	base := entry{
		step: Step{
			Filter: a.Info.Name, Params: a.Values, Stage: a.Stage, Callable: a.Callable,
			PolicyID: cp.ID, PolicyName: p.Name, Line: p.Line, Target: t.String(), Info: a.Info,
		},
		fid: fid, del: a.Verb == VerbDelete, decl: decl, pidx: pidx, pred: cp.pred,
	}
	add := func(level Level, tenant, bucket, key string) {
		e := base
		e.level, e.step.Level = level, level
		e.tenant, e.bucket, e.key = tenant, bucket, key
		c.entries = append(c.entries, &e)
	}
	switch t.Kind {
	case TargetAll:
		if t.Scope == TargetVolume {
			e := base
			e.level, e.step.Level, e.vol = LevelAll, LevelAll, true
			c.entries = append(c.entries, &e)
			return
		}
		add(LevelAll, "", "", "")
	case TargetTenant:
		add(LevelTenant, t.Tenant, "", "")
	case TargetBucket:
		add(LevelBucket, t.Tenant, t.Bucket, "")
	case TargetObject:
		add(LevelObject, t.Tenant, t.Bucket, t.Key)
	case TargetGroup:
		for _, m := range c.groups[t.Name] {
			tenant, bucket, _ := strings.Cut(m, "/")
			e := base
			e.level, e.step.Level = LevelGroup, LevelGroup
			e.tenant, e.bucket, e.group = tenant, bucket, t.Name
			c.entries = append(c.entries, &e)
		}
	case TargetVolume:
		e := base
		e.level, e.step.Level, e.vol, e.volume = LevelVolume, LevelVolume, true, t.Name
		c.entries = append(c.entries, &e)
	}
}

func (c *Compiled) addSLO(cp *CompiledPolicy, pidx, decl int, a *Action) {
	p := cp.Policy
	for _, t := range p.Targets {
		base := sloEntry{SLO: SLO{
			Kind: a.SLO, Delete: a.Verb == VerbDelete, Params: a.Values,
			PolicyID: cp.ID, PolicyName: p.Name, Line: p.Line, Dynamic: p.Dynamic, Context: p.Context,
		}, decl: decl, pidx: pidx}
		switch t.Kind {
		case TargetAll:
			e := base
			e.Level = LevelAll
			c.slos = append(c.slos, &e)
		case TargetTenant:
			e := base
			e.Level, e.Target = LevelTenant, t.Name
			c.slos = append(c.slos, &e)
		case TargetVolume:
			e := base
			e.Level, e.Target = LevelVolume, t.Name
			c.slos = append(c.slos, &e)
		case TargetGroup:
			for _, m := range c.groups[t.Name] {
				if strings.Contains(m, "/") {
					continue // bandwidth is per tenant; warnings() reports it
				}
				e := base
				e.Level, e.Target, e.Group = LevelGroup, m, t.Name
				c.slos = append(c.slos, &e)
			}
		}
	}
}

// Provision sets the Instance of every object-filter step, static and
// dynamic, to what build returns: once per action, whose targets share
// the instance. It is the last step of the filters' life cycle
// (filter.Provisioner) and must run before any table of c is used, for
// tables share their steps with c.
func (c *Compiled) Provision(build func(s *Step) filter.Filter) {
	byDecl := map[int]filter.Filter{}
	for _, e := range c.entries {
		if e.del || e.vol || e.step.Info == nil {
			continue
		}
		f, ok := byDecl[e.decl]
		if !ok {
			f = build(&e.step)
			byDecl[e.decl] = f
		}
		e.step.Instance = f
	}
}

// Static returns the table of static policies: no dynamic policy is
// active in it.
func (c *Compiled) Static() *Table { return c.static }

// Dynamic returns the dynamic policies, in declaration order.
func (c *Compiled) Dynamic() []*CompiledPolicy {
	var out []*CompiledPolicy
	for _, p := range c.Policies {
		if p.Dynamic {
			out = append(out, p)
		}
	}
	return out
}

// Policy returns the policy with the given id.
func (c *Compiled) Policy(id string) (*CompiledPolicy, bool) {
	i, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	return c.Policies[i], true
}

// Table builds the table of the static policies plus the dynamic policies
// whose ids are in activated (controllers activate a dynamic policy while
// its trigger holds). Naming an unknown or static policy is an error.
func (c *Compiled) Table(activated ...string) (*Table, error) {
	if len(activated) == 0 {
		return c.static, nil
	}
	active := make([]bool, len(c.Policies))
	for _, id := range activated {
		i, ok := c.byID[id]
		if !ok {
			return nil, fmt.Errorf("policy: no policy %q to activate", id)
		}
		if !c.Policies[i].Dynamic {
			return nil, fmt.Errorf("policy: policy %q is static and always active", id)
		}
		active[i] = true
	}
	return c.build(active), nil
}

// Table is an immutable lookup table: what the data plane consults on
// every request. It is safe for concurrent use.
type Table struct {
	c        *Compiled
	active   []bool // per policy
	nfilters int
	all      []*entry
	tenants  map[string][]*entry
	buckets  map[bucketKey][]*entry
	bare     map[string][]*entry // bare-bucket entries, merged at request time
	objects  map[objectKey][]*entry
	allVol   []*entry
	volumes  map[string][]*entry
	slos     []*sloEntry
}

// build indexes the entries of static policies and of the dynamic ones
// marked in activated (nil: none).
func (c *Compiled) build(activated []bool) *Table {
	t := &Table{
		c: c, active: make([]bool, len(c.Policies)), nfilters: len(c.filters),
		tenants: map[string][]*entry{}, buckets: map[bucketKey][]*entry{}, bare: map[string][]*entry{},
		objects: map[objectKey][]*entry{}, volumes: map[string][]*entry{},
	}
	for i, p := range c.Policies {
		t.active[i] = !p.Dynamic || activated != nil && activated[i]
	}
	var (
		all, allVol []*entry
		tenantRaw   = map[string][]*entry{}
		groupT      = map[string][]*entry{}
		groupB      = map[bucketKey][]*entry{}
		bucketRaw   = map[bucketKey][]*entry{}
		bareRaw     = map[string][]*entry{}
		objectRaw   = map[objectKey][]*entry{}
		volRaw      = map[string][]*entry{}
	)
	for _, e := range c.entries {
		if !t.active[e.pidx] {
			continue
		}
		switch {
		case e.vol && e.level == LevelAll:
			allVol = append(allVol, e)
		case e.vol:
			volRaw[e.volume] = append(volRaw[e.volume], e)
		case e.level == LevelAll:
			all = append(all, e)
		case e.level == LevelGroup && e.bucket == "":
			groupT[e.tenant] = append(groupT[e.tenant], e)
		case e.level == LevelGroup:
			k := bucketKey{e.tenant, e.bucket}
			groupB[k] = append(groupB[k], e)
		case e.level == LevelTenant:
			tenantRaw[e.tenant] = append(tenantRaw[e.tenant], e)
		case e.level == LevelBucket && e.tenant == "":
			bareRaw[e.bucket] = append(bareRaw[e.bucket], e)
		case e.level == LevelBucket:
			k := bucketKey{e.tenant, e.bucket}
			bucketRaw[k] = append(bucketRaw[k], e)
		case e.level == LevelObject:
			k := objectKey{e.tenant, e.bucket, e.key}
			objectRaw[k] = append(objectRaw[k], e)
		}
	}
	t.all = view(all)
	for tn := range union(tenantRaw, groupT) {
		t.tenants[tn] = view(all, groupT[tn], tenantRaw[tn])
	}
	for k := range union(bucketRaw, groupB) {
		t.buckets[k] = view(all, groupT[k.tenant], tenantRaw[k.tenant], groupB[k], bucketRaw[k], bareRaw[k.bucket])
	}
	for k, es := range objectRaw {
		bk := bucketKey{k.tenant, k.bucket}
		t.objects[k] = view(all, groupT[k.tenant], tenantRaw[k.tenant], groupB[bk], bucketRaw[bk], bareRaw[k.bucket], es)
	}
	for b, es := range bareRaw {
		t.bare[b] = view(es)
	}
	t.allVol = view(allVol)
	for v, es := range volRaw {
		t.volumes[v] = view(allVol, es)
	}
	for _, s := range c.slos {
		if t.active[s.pidx] {
			t.slos = append(t.slos, s)
		}
	}
	return t
}

func union[K comparable](a, b map[K][]*entry) map[K]bool {
	out := make(map[K]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// view merges entry lists into one sorted by filter, then level and
// declaration, most specific and latest first. Entries that can never win
// are dropped: those after an unconditional entry of their filter, and
// those after an entry of their filter with the same condition (when it
// holds the earlier one wins, when it does not neither applies).
func view(parts ...[]*entry) []*entry {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]*entry, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.fid != b.fid {
			return a.fid < b.fid
		}
		return a.outranks(b)
	})
	res := out[:0]
	seen := map[*objPred]bool{}
	for i := 0; i < len(out); {
		f, cut := out[i].fid, false
		clear(seen)
		for ; i < len(out) && out[i].fid == f; i++ {
			if e := out[i]; !cut && !seen[e.pred] {
				res = append(res, e)
				seen[e.pred] = true
				cut = e.pred == nil
			}
		}
	}
	return res[:len(res):len(res)]
}

// maxStack bounds the filters and steps resolved without heap buffers.
const maxStack = 64

// Resolve returns q's pipeline. It runs on every request: it does map
// lookups over precomputed views, evaluates object conditions, and
// allocates only the returned steps.
func (t *Table) Resolve(q Query) Resolution {
	lists := t.lists(&q)
	return t.resolve(lists[:], &q, false)
}

// MayResolve reports whether Resolve could return a step for q's target
// and method whatever the object's size, content type and tags: entries
// count without their conditions, and deletions are ignored (they only
// remove). False means no filter of q.Method applies to any object at
// that key, so a caller may act before it knows the object (the S3 front
// end opens a GET before it has the object's metadata).
func (t *Table) MayResolve(q Query) bool { return t.MayResolveOther(q) }

// MayResolveOther is MayResolve leaving out the filters named in except:
// whether any other filter of q.Method could apply to q's target.
func (t *Table) MayResolveOther(q Query, except ...string) bool {
	for _, l := range t.lists(&q) {
		for _, e := range l {
			if !e.del && !e.vol && e.methodOK(q.Method) && !slices.Contains(except, e.step.Filter) {
				return true
			}
		}
	}
	return false
}

// lists returns the precomputed entry lists that hold q's candidates.
func (t *Table) lists(q *Query) [2][]*entry {
	var lists [2][]*entry
	if v, ok := t.objects[objectKey{q.Tenant, q.Bucket, q.Key}]; ok {
		lists[0] = v
	} else if v, ok := t.buckets[bucketKey{q.Tenant, q.Bucket}]; ok {
		lists[0] = v
	} else {
		lists[0] = t.all
		if v, ok := t.tenants[q.Tenant]; ok {
			lists[0] = v
		}
		if len(t.bare) > 0 {
			lists[1] = t.bare[q.Bucket]
		}
	}
	return lists
}

// ResolveVolume returns the pipeline of a volume's block requests.
func (t *Table) ResolveVolume(volume string, m filter.Method) Resolution {
	l := t.allVol
	if v, ok := t.volumes[volume]; ok {
		l = v
	}
	q := Query{Method: m, Size: -1}
	return t.resolve([][]*entry{l}, &q, false)
}

func (t *Table) resolve(lists [][]*entry, q *Query, assumeTrue bool) Resolution {
	var wbuf [maxStack]*entry
	w := wbuf[:0]
	if t.nfilters <= maxStack {
		w = wbuf[:t.nfilters]
	} else {
		w = make([]*entry, t.nfilters)
	}
	for _, l := range lists {
		for i := 0; i < len(l); {
			e := l[i]
			f := e.fid
			if cur := w[f]; cur == nil || e.outranks(cur) {
				if e.pred == nil || assumeTrue || e.pred.eval(q) {
					w[f] = e
				} else {
					i++
					continue
				}
			}
			for i < len(l) && l[i].fid == f {
				i++
			}
		}
	}
	return resolution(w, q.Method)
}

// resolution orders the winning entries by declaration and lays out their
// steps per stage, in one allocation.
func resolution(w []*entry, m filter.Method) Resolution {
	var sbuf [maxStack]*entry
	sel := sbuf[:0]
	for _, e := range w {
		if e != nil && !e.del && e.methodOK(m) {
			sel = append(sel, e)
		}
	}
	if len(sel) == 0 {
		return Resolution{}
	}
	for i := 1; i < len(sel); i++ {
		for j := i; j > 0 && sel[j].decl < sel[j-1].decl; j-- {
			sel[j], sel[j-1] = sel[j-1], sel[j]
		}
	}
	steps := make([]Step, len(sel))
	n := 0
	for _, e := range sel {
		if e.step.Stage != filter.StageStorage {
			steps[n] = e.step
			n++
		}
	}
	g := n
	for _, e := range sel {
		if e.step.Stage == filter.StageStorage {
			steps[n] = e.step
			n++
		}
	}
	return Resolution{Gateway: steps[:g:g], Storage: steps[g:]}
}

// Active reports whether the policy with the given id is in force in t.
func (t *Table) Active(id string) bool {
	i, ok := t.c.byID[id]
	return ok && t.active[i]
}

// Compiled returns what t was built from.
func (t *Table) Compiled() *Compiled { return t.c }

// SLOs returns the SLO records in force in t, in declaration order.
func (t *Table) SLOs() []SLO {
	out := make([]SLO, len(t.slos))
	for i, s := range t.slos {
		out[i] = s.SLO
	}
	return out
}

// SLO returns the effective SLO of kind for a tenant (bandwidth) or a
// volume (throttle): the most specific record (tenant or volume > group >
// ALL), the latest declared at that level; false when none is in force or
// the winner is a DELETE.
func (t *Table) SLO(kind SLOKind, name string) (SLO, bool) {
	return t.ContextSLO(kind, name, "")
}

// ContextSLO is SLO for the records naming request class context (""
// for the records that name none).
func (t *Table) ContextSLO(kind SLOKind, name, context string) (SLO, bool) {
	var best *sloEntry
	for _, s := range t.slos {
		if s.Kind != kind || s.Context != context || s.Level != LevelAll && s.Target != name {
			continue
		}
		if best == nil || s.Level > best.Level || s.Level == best.Level && s.decl > best.decl {
			best = s
		}
	}
	if best == nil || best.Delete {
		return SLO{}, false
	}
	return best.SLO, true
}
