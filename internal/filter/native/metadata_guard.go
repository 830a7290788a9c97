package native

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
)

// The metadata guard removes or refuses named x-amz-meta-* keys on PUT:
// Crystal's metadata blocker. A refused request gets 400 InvalidArgument
// naming the key, and nothing is stored.
const (
	metadataGuardName    = "metadata_guard"
	metadataGuardVersion = 1
)

// MetadataGuard is a metadata_guard instance.
type MetadataGuard struct {
	info        *filter.Info
	strip, deny []string
}

var (
	_ filter.MetaEditor  = (*MetadataGuard)(nil)
	_ filter.RequestOnly = (*MetadataGuard)(nil)
)

func MetadataGuardInfo() *filter.Info {
	in := &filter.Info{
		Name:    metadataGuardName,
		Version: metadataGuardVersion,
		Kind:    "native",
		Methods: []filter.Method{filter.MethodPut},
		Stages:  []filter.Stage{filter.StageGateway},
		Doc: "Removes (strip=) or refuses (deny=) the named x-amz-meta-* keys of PUTs, copies and multipart uploads; " +
			"names are separated by ':' or '|', with or without the x-amz-meta- prefix, and a trailing '*' matches a prefix.",
		Params: []filter.ParamSpec{
			{Name: "strip", Type: filter.TypeString, Doc: "keys removed silently, e.g. strip=x-amz-meta-internal:debug*"},
			{Name: "deny", Type: filter.TypeString, Doc: "keys whose presence refuses the request with 400 InvalidArgument"},
		},
	}
	in.Config = func() filter.Provisioner { return &metadataGuardConfig{info: in} }
	return in
}

// metadataGuardConfig is the metadata guard's parameters, decoded.
type metadataGuardConfig struct {
	Strip string `param:"strip"`
	Deny  string `param:"deny"`

	info *filter.Info
}

var (
	_ filter.Validator   = (*metadataGuardConfig)(nil)
	_ filter.Provisioner = (*metadataGuardConfig)(nil)
)

// Validate checks the key lists' patterns.
func (c *metadataGuardConfig) Validate() error {
	if _, err := metaKeyList(c.Strip); err != nil {
		return filter.Invalid("strip", "strip: %v", err)
	}
	if _, err := metaKeyList(c.Deny); err != nil {
		return filter.Invalid("deny", "deny: %v", err)
	}
	return nil
}

func (c *metadataGuardConfig) Provision(filter.Env) (filter.Filter, error) {
	g := &MetadataGuard{info: c.info}
	g.strip, _ = metaKeyList(c.Strip) // Validate has parsed them
	g.deny, _ = metaKeyList(c.Deny)
	return g, nil
}

// metaKeyList parses "a:b|c*" into lower-case key patterns without the
// x-amz-meta- prefix.
func metaKeyList(s string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ':' || r == '|' || r == ';' }) {
		f = strings.ToLower(strings.TrimSpace(f))
		f = strings.TrimPrefix(f, "x-amz-meta-")
		if f == "" {
			continue
		}
		if strings.Contains(strings.TrimSuffix(f, "*"), "*") {
			return nil, fmt.Errorf("%q: '*' is allowed only at the end", f)
		}
		out = append(out, f)
	}
	return out, nil
}

func metaKeyMatches(patterns []string, key string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool {
		if pre, ok := strings.CutSuffix(p, "*"); ok {
			return strings.HasPrefix(key, pre)
		}
		return p == key
	})
}

// Info describes the filter.
func (g *MetadataGuard) Info() *filter.Info { return g.info }

// Peek is 0: the guard decides before the body is read.
func (g *MetadataGuard) Peek() int { return 0 }

// EditMeta refuses a denied key, then removes stripped ones. The refusal
// names the first denied key in sorted order, so the answer is stable.
func (g *MetadataGuard) EditMeta(_ context.Context, _ *filter.Request, _ []byte, meta map[string]string) error {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if metaKeyMatches(g.deny, k) {
			return &filter.Refusal{Filter: metadataGuardName, Message: fmt.Sprintf("metadata key x-amz-meta-%s is not allowed here", k)}
		}
	}
	for _, k := range keys {
		if metaKeyMatches(g.strip, k) {
			delete(meta, k)
		}
	}
	return nil
}

// RequestOnly says the PUT stream is not the filter's: the guard acts on
// metadata only.
func (g *MetadataGuard) RequestOnly() {}
