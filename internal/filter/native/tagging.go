package native

import (
	"context"
	"regexp"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
)

// The tagging filter sets user metadata from a regular expression matched
// against the object's key or the first bytes of its content, so that
// later policies (OBJECT_TAG=...) and applications can tell objects apart
// without reading them.
const (
	taggingName    = "tagging"
	taggingVersion = 1
	maxTagPeek     = 1 << 20
)

// Tagging is a tagging instance.
type Tagging struct {
	info    *filter.Info
	re      *regexp.Regexp
	name    string
	value   string // template: $1, ${name} expand from the match
	content bool
	peek    int
}

var (
	_ filter.MetaEditor  = (*Tagging)(nil)
	_ filter.RequestOnly = (*Tagging)(nil)
)

var metaNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,127}$`)

func TaggingInfo() *filter.Info {
	in := &filter.Info{
		Name:    taggingName,
		Version: taggingVersion,
		Kind:    "native",
		Methods: []filter.Method{filter.MethodPut},
		Stages:  []filter.Stage{filter.StageGateway},
		Doc: `Sets user metadata x-amz-meta-NAME when regex matches the key (match=key) or the first peek bytes of the ` +
			`content (match=content); tag="NAME=VALUE", where VALUE may use the match's groups ($1, ${name}).`,
		Params: []filter.ParamSpec{
			{Name: "regex", Type: filter.TypeString, Doc: "RE2 regular expression"},
			{Name: "tag", Type: filter.TypeString, Doc: `"NAME=VALUE": the metadata key (without x-amz-meta-) and its value template`},
			{Name: "match", Type: filter.TypeEnum, Default: "key", Enum: []string{"key", "content"}, Doc: "what regex is matched against"},
			{Name: "peek", Type: filter.TypeSize, Default: "4096", Min: 1, Max: maxTagPeek, Doc: "leading bytes of the content matched when on=content"},
		},
	}
	in.Config = func() filter.Provisioner { return &taggingConfig{info: in} }
	return in
}

// taggingConfig is the tagging filter's parameters, decoded.
type taggingConfig struct {
	Regex string `param:"regex"`
	Tag   string `param:"tag"`
	Match string `param:"match"`
	Peek  int    `param:"peek"`

	info *filter.Info
}

var (
	_ filter.Validator   = (*taggingConfig)(nil)
	_ filter.Provisioner = (*taggingConfig)(nil)
)

// Validate checks what the constructor needs: both of regex= and tag= or
// neither, a regex that compiles, a tag NAME=VALUE with a valid NAME.
func (c *taggingConfig) Validate() error {
	_, err := newTagging(c.info, c)
	return err
}

func (c *taggingConfig) Provision(filter.Env) (filter.Filter, error) { return newTagging(c.info, c) }

func newTagging(in *filter.Info, c *taggingConfig) (*Tagging, error) {
	if c.Regex == "" && c.Tag == "" {
		// Built without parameters (the registry's self-check): inert.
		return &Tagging{info: in}, nil
	}
	if c.Regex == "" {
		return nil, filter.Invalid("tag", "regex= and tag= are both required")
	}
	if c.Tag == "" {
		return nil, filter.Invalid("regex", "regex= and tag= are both required")
	}
	re, err := regexp.Compile(c.Regex)
	if err != nil {
		return nil, &filter.ParamError{Param: "regex", Msg: "regex: " + err.Error()}
	}
	name, value, ok := strings.Cut(c.Tag, "=")
	name = strings.ToLower(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(name)), "x-amz-meta-"))
	if !ok || !metaNameRE.MatchString(name) {
		return nil, filter.Invalid("tag", "tag=%q: want NAME=VALUE with NAME made of a-z, 0-9, '-', '_' and '.'", c.Tag)
	}
	t := &Tagging{info: in, re: re, name: name, value: value, content: c.Match == "content", peek: c.Peek}
	return t, nil
}

// Info describes the filter.
func (t *Tagging) Info() *filter.Info { return t.info }

// Peek is how many leading bytes the content match needs (0 on keys).
func (t *Tagging) Peek() int {
	if t.content {
		return t.peek
	}
	return 0
}

// EditMeta sets the tag when the regex matches. A client's own value of
// the same key is replaced: the policy is the authority on its tags.
func (t *Tagging) EditMeta(_ context.Context, req *filter.Request, head []byte, meta map[string]string) error {
	if t.re == nil {
		return nil
	}
	var subject []byte
	if t.content {
		subject = head
	} else {
		subject = []byte(req.Key)
	}
	m := t.re.FindSubmatchIndex(subject)
	if m == nil {
		return nil
	}
	v := t.re.Expand(nil, []byte(t.value), subject, m)
	meta[t.name] = sanitizeMetaValue(v)
	return nil
}

// sanitizeMetaValue keeps a value HTTP-header safe: printable ASCII, at
// most 256 bytes; anything else is replaced by '_'.
func sanitizeMetaValue(v []byte) string {
	if len(v) > 256 {
		v = v[:256]
	}
	out := make([]byte, len(v))
	for i, c := range v {
		if c < 0x20 || c > 0x7e {
			c = '_'
		}
		out[i] = c
	}
	return strings.TrimSpace(string(out))
}

// RequestOnly says the PUT stream is not the filter's: the content match
// sees the body through the front end's peek, before any filter.
func (t *Tagging) RequestOnly() {}
