package policy

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
)

// Parameter types of SLO records that filter.ParamType does not have.
const (
	typeFloat   filter.ParamType = "float"
	typeOpsRate filter.ParamType = "ops/s"
	// typeCount is a count written plainly or with a decimal suffix:
	// 10M is ten million (quota.go).
	typeCount filter.ParamType = "count"
)

// sloInfo describes an SLO action as if it were a filter, so that its
// parameters are validated like a filter's.
func sloInfo(k SLOKind) *filter.Info {
	switch k {
	case SLOBandwidth:
		return &filter.Info{Name: string(k), Kind: "slo", Version: 1, Doc: "tenant bandwidth objective for the global controller",
			Params: []filter.ParamSpec{
				{Name: "get", Type: filter.TypeRate, Doc: "GET bandwidth"},
				{Name: "put", Type: filter.TypeRate, Doc: "PUT bandwidth"},
				{Name: "reservation", Type: filter.TypeRate, Doc: "guaranteed minimum bandwidth"},
				{Name: "limit", Type: filter.TypeRate, Doc: "bandwidth cap"},
				{Name: "weight", Type: typeFloat, Min: 0.001, Max: 1e6, Doc: "share of spare bandwidth"},
				{Name: "ops", Type: typeOpsRate, Doc: "operations per second"},
				{Name: "background", Type: filter.TypeRate, Doc: "cap of Facet's background work for the tenant (multipart cleanup...)"},
			}}
	case SLOQuota:
		return &filter.Info{Name: string(k), Kind: "slo", Version: 1, Doc: "tenant quota: where a quota is also stored (facet ctl quota set), the smaller limit applies",
			Params: []filter.ParamSpec{
				{Name: "bytes", Type: filter.TypeSize, Min: 1, Max: maxQuota, Doc: "logical bytes stored (objects and open uploads' parts)"},
				{Name: "objects", Type: typeCount, Min: 1, Max: maxQuota, Doc: "objects"},
				{Name: "buckets", Type: typeCount, Min: 1, Max: maxQuota, Doc: "buckets"},
				{Name: "uploads", Type: typeCount, Min: 1, Max: maxQuota, Doc: "open multipart uploads"},
			}}
	case SLOThrottle:
		return &filter.Info{Name: string(k), Kind: "slo", Version: 1, Doc: "volume throttles",
			Params: []filter.ParamSpec{
				{Name: "read_bw", Type: filter.TypeRate},
				{Name: "write_bw", Type: filter.TypeRate},
				{Name: "read_iops", Type: typeOpsRate},
				{Name: "write_iops", Type: typeOpsRate},
			}}
	}
	return nil
}

// Check validates policies against v and fills in what Compile needs:
// canonical names, parameters in canonical form with defaults applied,
// stages, the Static/Dynamic split. It stops at the first error, an
// *Error. Checking a policy again redoes it from its parse tree.
func Check(policies []*Policy, v Vocabulary) error {
	for _, p := range policies {
		if err := checkPolicy(p, v); err != nil {
			return err
		}
	}
	return nil
}

// ParseAndCheck parses text and checks the policies in it.
func ParseAndCheck(name, text string, v Vocabulary) ([]*Policy, error) {
	ps, err := Parse(name, text)
	if err != nil {
		return nil, err
	}
	if err := Check(ps, v); err != nil {
		return nil, err
	}
	return ps, nil
}

type checkError struct{ err *Error }

type checker struct {
	p       *Policy
	v       Vocabulary
	volumes bool // the policy targets volumes
}

func (c *checker) errorf(pos Pos, suggestion, format string, args ...any) {
	panic(checkError{newError(c.p.src, pos, suggestion, format, args...)})
}

func checkPolicy(p *Policy, v Vocabulary) (err error) {
	c := &checker{p: p, v: v}
	defer func() {
		if r := recover(); r != nil {
			ce, ok := r.(checkError)
			if !ok {
				panic(r)
			}
			p.checked = false
			err = ce.err
		}
	}()
	p.checked, p.Dynamic, p.Trigger, p.objPred = false, false, nil, nil
	if len(p.Targets) == 0 || len(p.Actions) == 0 {
		c.errorf(p.Pos, "", "a policy needs targets and actions")
	}
	volumes := c.targets()
	c.volumes = volumes

	var objCond Cond
	if p.When != nil {
		c.cond(p.When)
		p.Trigger, objCond = splitCond(p.When)
	}
	for _, o := range p.To {
		c.object(o)
	}
	p.Dynamic = p.Trigger != nil
	firstObj := firstObjectCmp(objCond)
	if firstObj == nil && len(p.To) > 0 {
		firstObj = p.To[0]
	}
	if volumes && firstObj != nil {
		c.errorf(firstObj.Pos, "", "object conditions do not apply to volumes")
	}

	seen := map[string]bool{}
	for _, a := range p.Actions {
		c.action(a, volumes)
		if seen[a.Info.Name] {
			c.errorf(a.FilterPos, "", "%s appears twice in this policy", a.Info.Name)
		}
		seen[a.Info.Name] = true
		if a.SLO != "" && firstObj != nil {
			c.errorf(firstObj.Pos, "", "object conditions do not apply to %s (an SLO)", a.SLO)
		}
		if a.Mode == ModeTransient && !p.Dynamic {
			c.errorf(a.ModePos, "", "TRANSIENT needs a metric trigger in WHEN: a static policy is always in force")
		}
		if a.Callable && p.Dynamic {
			c.errorf(a.CallPos, "", "CALLABLE cannot be used with a metric trigger: a callable filter runs when a request asks for it")
		}
	}

	c.context()

	var pred *objPred
	if objCond != nil {
		pred = compilePred(objCond)
	}
	for _, o := range p.To {
		pred = andPred(pred, compilePred(o))
	}
	p.objPred = pred
	p.checked = true
	return nil
}

// targets checks the targets and reports whether they are volumes.
func (c *checker) targets() (volumes bool) {
	var first *Target
	for i, t := range c.p.Targets {
		isVol := t.Kind == TargetVolume || t.Kind == TargetAll && t.Scope == TargetVolume
		if i == 0 {
			volumes, first = isVol, t
		} else if isVol != volumes {
			c.errorf(t.Pos, "", "a policy cannot mix volume targets with tenant, bucket or object targets (%s %s is first)", first.Keyword, first.Name)
		}
		c.target(t)
	}
	return volumes
}

func (c *checker) target(t *Target) {
	t.Tenant, t.Bucket, t.Key = "", "", ""
	name := t.Name
	switch t.Kind {
	case TargetAll:
	case TargetTenant:
		if strings.Contains(name, "/") {
			c.errorf(t.NamePos, "", "a tenant name cannot contain '/' (for a bucket write BUCKET %s)", name)
		}
		c.exists(TargetTenant, name, t.NamePos)
		t.Tenant = name
	case TargetBucket:
		parts := strings.Split(name, "/")
		switch {
		case len(parts) == 1:
			t.Bucket = name
			c.exists(TargetBucket, name, t.NamePos)
		case len(parts) == 2 && parts[0] != "" && parts[1] != "":
			t.Tenant, t.Bucket = parts[0], parts[1]
			c.exists(TargetTenant, t.Tenant, t.NamePos)
			c.exists(TargetBucket, name, t.NamePos)
		default:
			c.errorf(t.NamePos, "", "a bucket target is TENANT/BUCKET or BUCKET, found %q", name)
		}
	case TargetObject:
		parts := strings.SplitN(name, "/", 3)
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			c.errorf(t.NamePos, "", "an object target is TENANT/BUCKET/KEY, found %q", name)
		}
		t.Tenant, t.Bucket, t.Key = parts[0], parts[1], parts[2]
		c.exists(TargetTenant, t.Tenant, t.NamePos)
		c.exists(TargetBucket, t.Tenant+"/"+t.Bucket, t.NamePos)
	case TargetGroup:
		c.exists(TargetGroup, name, t.NamePos)
	case TargetVolume:
		if strings.Contains(name, "/") {
			c.errorf(t.NamePos, "", "a volume name cannot contain '/'")
		}
		c.exists(TargetVolume, name, t.NamePos)
	}
}

func (c *checker) exists(kind TargetKind, name string, pos Pos) {
	if c.v.Target(kind, name) {
		return
	}
	sug := ""
	if tn, ok := c.v.(TargetNamer); ok {
		cands := tn.TargetNames(kind)
		if kind == TargetBucket && !strings.Contains(name, "/") {
			bare := make([]string, 0, len(cands))
			for _, b := range cands {
				if _, bn, ok := strings.Cut(b, "/"); ok {
					bare = append(bare, bn)
				}
			}
			cands = bare
		}
		sug = suggest(name, cands)
	}
	c.errorf(pos, sug, "unknown %s %q", kind, name)
}

// Condition classes: what kinds of terms a condition holds.
const (
	classMetric = 1
	classObject = 2
	classMixed  = classMetric | classObject
)

func condClass(n Cond) int {
	switch n := n.(type) {
	case *BinaryCond:
		return condClass(n.X) | condClass(n.Y)
	case *MetricCmp:
		return classMetric
	}
	return classObject
}

// cond checks a WHEN condition: its terms, and that no OR mixes object
// terms (checked per request) with metric terms (checked by controllers).
func (c *checker) cond(n Cond) {
	switch n := n.(type) {
	case *BinaryCond:
		c.cond(n.X)
		c.cond(n.Y)
		if n.Op == "OR" {
			cx, cy := condClass(n.X), condClass(n.Y)
			if cx != cy || cx == classMixed {
				c.errorf(n.OpPos, "", "object conditions can be combined with metric conditions only by AND")
			}
		}
	case *MetricCmp:
		c.metric(n)
	case *ObjectCmp:
		c.object(n)
	}
}

// splitCond splits a checked condition into its metric part and its
// object part, whose AND it is. Either may be nil.
func splitCond(n Cond) (metric, object Cond) {
	switch condClass(n) {
	case classMetric:
		return n, nil
	case classObject:
		return nil, n
	}
	b := n.(*BinaryCond) // mixed, so an AND
	mx, ox := splitCond(b.X)
	my, oy := splitCond(b.Y)
	return andCond(mx, my, b.OpPos), andCond(ox, oy, b.OpPos)
}

func andCond(x, y Cond, pos Pos) Cond {
	switch {
	case x == nil:
		return y
	case y == nil:
		return x
	}
	return &BinaryCond{Op: "AND", OpPos: pos, X: x, Y: y}
}

func firstObjectCmp(n Cond) *ObjectCmp {
	switch n := n.(type) {
	case *BinaryCond:
		if o := firstObjectCmp(n.X); o != nil {
			return o
		}
		return firstObjectCmp(n.Y)
	case *ObjectCmp:
		return n
	}
	return nil
}

// lookupFold looks name up exactly, then ignoring case; it returns the
// canonical name.
func lookupFold[T any](name string, get func(string) (T, bool), names func() []string) (T, string, bool) {
	if x, ok := get(name); ok {
		return x, name, true
	}
	for _, n := range names() {
		if strings.EqualFold(n, name) {
			if x, ok := get(n); ok {
				return x, n, true
			}
		}
	}
	var zero T
	return zero, "", false
}

func (c *checker) metric(m *MetricCmp) {
	info, name, ok := lookupFold(m.Metric, c.v.Metric, c.v.MetricNames)
	if !ok {
		c.errorf(m.Pos, suggest(m.Metric, append(c.v.MetricNames(), objectFields...)), "unknown metric %q", m.Metric)
	}
	if info.Name == "" {
		info.Name = name
	}
	c.metricTarget(m, info.Name)
	m.Info = info
	val, msg := parseKind(m.Value.Raw, info.Unit, "metric "+info.Name)
	if msg != "" {
		c.errorf(m.Value.Pos, "", "%s", msg)
	}
	m.Threshold = val
}

func (c *checker) object(o *ObjectCmp) {
	raw := o.Value.Raw
	switch o.Field {
	case FieldType:
		pats, name, ok := lookupFold(raw, c.v.ObjectType, c.v.ObjectTypeNames)
		if !ok {
			c.errorf(o.Value.Pos, suggest(raw, c.v.ObjectTypeNames()), "unknown object type %q", raw)
		}
		o.TypeName, o.Patterns = name, normalizePatterns(pats)
	case FieldSize:
		v, msg := parseKind(raw, KindBytes, "OBJECT_SIZE")
		if msg != "" {
			c.errorf(o.Value.Pos, "", "%s", msg)
		}
		o.Size = int64(math.Round(v))
	case FieldName:
		if err := validGlob(raw); err != nil {
			c.errorf(o.Value.Pos, "", "bad OBJECT_NAME pattern %q: %v", raw, err)
		}
	case FieldTag:
		key := strings.TrimPrefix(strings.ToLower(raw), "x-amz-meta-")
		if key == "" {
			c.errorf(o.Value.Pos, "", "OBJECT_TAG needs a key after x-amz-meta-")
		}
		o.TagKey = key
	}
}

func (c *checker) action(a *Action, volumes bool) {
	a.Info, a.SLO, a.Values = nil, "", nil
	switch k := SLOKind(strings.ToLower(a.Filter)); k {
	case SLOBandwidth, SLOThrottle, SLOQuota:
		c.sloAction(a, k)
		return
	}
	if volumes {
		c.blockAction(a)
		return
	}
	info, _, ok := lookupFold(a.Filter, c.v.Filter, c.v.FilterNames)
	if !ok {
		c.errorf(a.FilterPos, suggest(a.Filter, append(c.v.FilterNames(), string(SLOBandwidth), string(SLOThrottle), string(SLOQuota))), "unknown filter %q%s", a.Filter, c.blockOnlyHint(a.Filter))
	}
	a.Info = info
	if info.Owner != "" {
		c.owned(a, info)
	}
	if a.Verb == VerbDelete {
		c.deleteAction(a, info.Name)
		return
	}
	if a.StageWord == "" {
		a.Stage = filter.StageGateway
		if len(info.Stages) > 0 {
			a.Stage = info.Stages[0]
		}
	} else if len(info.Stages) > 0 && !hasStage(info.Stages, a.Stage) {
		names := make([]string, len(info.Stages))
		for i, s := range info.Stages {
			names[i] = string(s)
		}
		c.errorf(a.StagePos, "", "filter %s does not run at stage %s (it runs at %s)", info.Name, a.Stage, strings.Join(names, " and "))
	}
	a.Values = c.params(a, "filter "+info.Name, info.Params)
	if info.Config != nil {
		_, err := info.Configure(a.Values)
		c.paramFault(a, err)
	}
}

// paramFault reports err, a filter's refusal of an action's decoded
// parameters (filter.Info.Configure): at the parameter a
// *filter.ParamError names when the policy gives it, else at the filter.
// So no accepted policy builds a filter that fails every request.
func (c *checker) paramFault(a *Action, err error) {
	if err == nil {
		return
	}
	pos, msg := a.FilterPos, err.Error()
	var pe *filter.ParamError
	if errors.As(err, &pe) {
		msg = pe.Msg
		for _, p := range a.Params {
			if strings.EqualFold(p.Name, pe.Param) {
				pos = p.Pos
				break
			}
		}
	}
	c.errorf(pos, "", "%s", msg)
}

// owned refuses a tenant's own filter in a policy whose targets are not
// all that tenant's: only an administrator's filters are shared.
func (c *checker) owned(a *Action, info *filter.Info) {
	for _, t := range c.p.Targets {
		if t.Tenant == info.Owner {
			continue
		}
		what := fmt.Sprintf("%s %s", t.Keyword, t.Name)
		if t.Kind == TargetBucket && t.Tenant == "" {
			what += " (write BUCKET " + info.Owner + "/" + t.Name + ")"
		}
		c.errorf(a.FilterPos, "", "filter %s belongs to tenant %s; only policies whose targets are all %s's can use it, not %s",
			info.Name, info.Owner, info.Owner, what)
	}
}

func hasStage(stages []filter.Stage, s filter.Stage) bool {
	for _, x := range stages {
		if x == s {
			return true
		}
	}
	return false
}

func (c *checker) deleteAction(a *Action, name string) {
	switch {
	case len(a.Params) > 0:
		c.errorf(a.WithPos, "", "DELETE takes no parameters")
	case a.StageWord != "":
		c.errorf(a.StagePos, "", "DELETE removes %s at every stage; ON is not allowed", name)
	case a.Callable:
		c.errorf(a.CallPos, "", "DELETE cannot be CALLABLE")
	}
	a.Stage = ""
}

func (c *checker) sloAction(a *Action, k SLOKind) {
	a.Info, a.SLO = sloInfo(k), k
	for _, t := range c.p.Targets {
		kind := t.Keyword
		if t.Kind == TargetAll {
			kind = t.String() // ALL BUCKETS
		}
		switch k {
		case SLOBandwidth:
			if t.Kind != TargetTenant && t.Kind != TargetGroup && !(t.Kind == TargetAll && t.Scope == TargetTenant) {
				c.errorf(t.Pos, "", "bandwidth is a tenant SLO: its targets are TENANT, GROUP or ALL TENANTS, not %s", kind)
			}
		case SLOQuota:
			if t.Kind != TargetTenant && t.Kind != TargetGroup && !(t.Kind == TargetAll && t.Scope == TargetTenant) {
				c.errorf(t.Pos, "", "quota is a tenant's: its targets are TENANT, GROUP or ALL TENANTS, not %s (a bucket's quota is set with facet ctl quota set --bucket)", kind)
			}
		case SLOThrottle:
			if t.Kind != TargetVolume && !(t.Kind == TargetAll && t.Scope == TargetVolume) {
				c.errorf(t.Pos, "", "throttle is a volume SLO: its targets are VOLUME or ALL VOLUMES, not %s", kind)
			}
		}
	}
	if a.StageWord != "" {
		c.errorf(a.StagePos, "", "%s is an SLO, not a pipeline filter: ON is not allowed", k)
	}
	if a.Callable {
		c.errorf(a.CallPos, "", "%s is an SLO, not a pipeline filter: CALLABLE is not allowed", k)
	}
	if a.Verb == VerbDelete {
		c.deleteAction(a, string(k))
		return
	}
	if len(a.Params) == 0 {
		names := make([]string, len(a.Info.Params))
		for i, p := range a.Info.Params {
			names[i] = p.Name
		}
		c.errorf(a.FilterPos, "", "SET %s needs parameters (%s)", k, strings.Join(names, ", "))
	}
	a.Values = c.params(a, string(k), a.Info.Params)
}

// params validates an action's parameters against specs and returns them
// canonical, with defaults applied. owner names the filter in messages.
func (c *checker) params(a *Action, owner string, specs []filter.ParamSpec) filter.Params {
	vals := filter.Params{}
	for _, p := range a.Params {
		var spec *filter.ParamSpec
		for i := range specs {
			if strings.EqualFold(specs[i].Name, p.Name) {
				spec = &specs[i]
				break
			}
		}
		if spec == nil {
			if len(specs) == 0 {
				c.errorf(p.Pos, "", "%s takes no parameters", owner)
			}
			names := make([]string, len(specs))
			for i, s := range specs {
				names[i] = s.Name
			}
			c.errorf(p.Pos, suggest(p.Name, names), "unknown parameter %q for %s", p.Name, owner)
		}
		if _, dup := vals[spec.Name]; dup {
			c.errorf(p.Pos, "", "parameter %s given twice", spec.Name)
		}
		s, sug, msg := canonicalParam(spec, p.Value.Raw, owner)
		if msg != "" {
			c.errorf(p.Value.Pos, sug, "%s", msg)
		}
		vals[spec.Name] = s
	}
	for i := range specs {
		spec := &specs[i]
		if _, set := vals[spec.Name]; set || spec.Default == "" {
			continue
		}
		s, _, msg := canonicalParam(spec, spec.Default, owner)
		if msg != "" {
			c.errorf(a.FilterPos, "", "%s has a bad default for %s: %s", owner, spec.Name, msg)
		}
		vals[spec.Name] = s
	}
	return vals
}

// foundText renders a value for "found X": numbers bare, words quoted.
func foundText(raw string) string {
	if _, ok := parseQuantity(raw); ok {
		return raw
	}
	return fmt.Sprintf("%q", raw)
}

// canonicalParam validates raw against spec and returns its canonical
// form, or a message (and maybe a suggestion).
func canonicalParam(spec *filter.ParamSpec, raw, owner string) (val, sug, msg string) {
	subject := fmt.Sprintf("parameter %s of %s", spec.Name, owner)
	var (
		v      float64
		format func(float64) string
	)
	switch spec.Type {
	case filter.TypeString, "":
		return raw, "", ""
	case filter.TypeBool:
		switch strings.ToLower(raw) {
		case "true", "yes", "1":
			return "true", "", ""
		case "false", "no", "0":
			return "false", "", ""
		}
		return "", "", fmt.Sprintf("%s wants true or false, found %s", subject, foundText(raw))
	case filter.TypeEnum:
		for _, e := range spec.Enum {
			if strings.EqualFold(e, raw) {
				return e, "", ""
			}
		}
		return "", suggest(raw, spec.Enum), fmt.Sprintf("%s must be one of %s, found %s", subject, strings.Join(spec.Enum, ", "), foundText(raw))
	case filter.TypeInt, typeFloat:
		q, ok := parseQuantity(raw)
		noun := "a number"
		if spec.Type == filter.TypeInt {
			noun = "an integer"
		}
		if !ok || q.class != classBare || spec.Type == filter.TypeInt && q.value != math.Trunc(q.value) {
			return "", "", fmt.Sprintf("%s wants %s, found %s", subject, noun, foundText(raw))
		}
		if q.value > 1e18 || math.IsInf(q.value, 0) {
			return "", "", fmt.Sprintf("%s is too large", raw)
		}
		v, format = q.value, formatFloat
		if spec.Type == filter.TypeInt {
			format = formatInt
		}
	case typeCount:
		n, m := parseCount(raw, subject)
		if m != "" {
			return "", "", m
		}
		v, format = float64(n), formatInt
	case filter.TypeSize, filter.TypeRate, filter.TypeDuration, filter.TypePercent, typeOpsRate:
		kind, f := map[filter.ParamType]ValueKind{
			filter.TypeSize: KindBytes, filter.TypeRate: KindByteRate, filter.TypeDuration: KindDuration,
			filter.TypePercent: KindRatio, typeOpsRate: KindOpsRate,
		}[spec.Type], formatInt
		switch spec.Type {
		case filter.TypeDuration:
			f = formatDuration
		case filter.TypePercent, typeOpsRate:
			f = formatFloat
		}
		x, m := parseKind(raw, kind, subject)
		if m != "" {
			return "", "", m
		}
		v, format = x, f
	default:
		return "", "", fmt.Sprintf("%s has an unsupported type %q", subject, spec.Type)
	}
	if spec.Max > spec.Min && (v < spec.Min || v > spec.Max) {
		bound := format
		switch spec.Type {
		case filter.TypeSize:
			bound = humanBytes
		case filter.TypeRate:
			bound = func(f float64) string { return humanBytes(f) + "/s" }
		}
		return "", "", fmt.Sprintf("%s must be between %s and %s, found %s", subject, bound(spec.Min), bound(spec.Max), raw)
	}
	return format(v), "", ""
}
