package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/facet-sds/facet/internal/bench/datagen"
)

// Scenario is one benchmark run: tenants with their workloads, run side by
// side against S3 endpoints (ssbench's and COSBench's "scenario" or
// "workload"). It is read from YAML or JSON (bench/scenarios/ has
// examples) or built from flags.
type Scenario struct {
	Name string `json:"name" yaml:"name"`
	// Duration bounds the run; with Ops (per tenant), whichever comes first.
	Duration Duration `json:"duration,omitempty" yaml:"duration,omitempty"`
	// Interval is the reporting period (default 1s).
	Interval Duration `json:"interval,omitempty" yaml:"interval,omitempty"`
	// Seed makes key choice, sizes and contents repeatable.
	Seed    uint64   `json:"seed,omitempty" yaml:"seed,omitempty"`
	Tenants []Tenant `json:"tenants" yaml:"tenants"`
	// Trace, when set, replays a trace instead of the tenants' synthetic
	// workloads; trace tenants are matched to Tenants by name.
	Trace *TraceSpec `json:"trace,omitempty" yaml:"trace,omitempty"`
}

// Tenant is one tenant's endpoint, credentials and workload.
type Tenant struct {
	Name     string `json:"name" yaml:"name"`
	Endpoint string `json:"endpoint" yaml:"endpoint"`
	Region   string `json:"region,omitempty" yaml:"region,omitempty"`
	// Credentials, given directly or (better, for files kept in a
	// repository) through the environment.
	AccessKey    string `json:"access_key,omitempty" yaml:"access_key,omitempty"`
	SecretKey    string `json:"secret_key,omitempty" yaml:"secret_key,omitempty"`
	AccessKeyEnv string `json:"access_key_env,omitempty" yaml:"access_key_env,omitempty"`
	SecretKeyEnv string `json:"secret_key_env,omitempty" yaml:"secret_key_env,omitempty"`

	Bucket string `json:"bucket" yaml:"bucket"`
	// CreateBucket (default true) creates the bucket before the run; an
	// existing bucket owned by the tenant is fine.
	CreateBucket *bool `json:"create_bucket,omitempty" yaml:"create_bucket,omitempty"`

	// Concurrency is the number of requests in flight (closed loop) or
	// the most in flight (open loop). Default 1.
	Concurrency int `json:"concurrency,omitempty" yaml:"concurrency,omitempty"`
	// Rate, in operations per second, makes the tenant open-loop:
	// requests start on schedule whether or not earlier ones finished.
	// 0 is closed-loop: each worker starts its next request when the
	// last one ends.
	Rate float64 `json:"rate,omitempty" yaml:"rate,omitempty"`
	// Ops stops the tenant after this many operations (0: no limit).
	Ops int64 `json:"ops,omitempty" yaml:"ops,omitempty"`
	// Start delays the tenant's first operation.
	Start Duration `json:"start,omitempty" yaml:"start,omitempty"`

	Mix    Mix          `json:"mix,omitempty" yaml:"mix,omitempty"`
	Size   SizeDist     `json:"size" yaml:"size"`
	Data   datagen.Spec `json:"data,omitempty" yaml:"data,omitempty"`
	Keys   KeySpace     `json:"keys,omitempty" yaml:"keys,omitempty"`
	List   ListSpec     `json:"list,omitempty" yaml:"list,omitempty"`
	Phases []Phase      `json:"phases,omitempty" yaml:"phases,omitempty"`
	Ramp   *Ramp        `json:"ramp,omitempty" yaml:"ramp,omitempty"`
}

// KeySpace is the set of keys a tenant's operations touch.
type KeySpace struct {
	// Count keys named Prefix + 8 digits (default 1000).
	Count  int    `json:"count,omitempty" yaml:"count,omitempty"`
	Prefix string `json:"prefix,omitempty" yaml:"prefix,omitempty"`
	// Prepopulate writes this many keys before the measured run, so that
	// GETs have something to read (-1: all of them).
	Prepopulate int `json:"prepopulate,omitempty" yaml:"prepopulate,omitempty"`
}

// ListSpec shapes LIST operations.
type ListSpec struct {
	MaxKeys int `json:"max_keys,omitempty" yaml:"max_keys,omitempty"` // default 1000
}

// Phase changes a tenant's workload for a while; phases run one after the
// other from the tenant's start, and the last one holds until the end.
// Unset fields keep the tenant's values.
type Phase struct {
	Duration    Duration `json:"duration" yaml:"duration"`
	Rate        *float64 `json:"rate,omitempty" yaml:"rate,omitempty"`
	Concurrency *int     `json:"concurrency,omitempty" yaml:"concurrency,omitempty"`
	Mix         Mix      `json:"mix,omitempty" yaml:"mix,omitempty"`
}

// Ramp steps the open-loop rate from From to To by Step every Every, as
// in the sources' dynamic-policy experiment (T1's PUTs rising 1→6/s). It
// expands to phases, after any explicit ones.
type Ramp struct {
	From  float64  `json:"from" yaml:"from"`
	To    float64  `json:"to" yaml:"to"`
	Step  float64  `json:"step" yaml:"step"`
	Every Duration `json:"every" yaml:"every"`
}

// Op is an S3 operation the benchmark issues.
type Op uint8

// The operations, in report order.
const (
	OpPut Op = iota
	OpGet
	OpHead
	OpDelete
	OpList
	numOps
)

func (o Op) String() string {
	switch o {
	case OpPut:
		return "PUT"
	case OpGet:
		return "GET"
	case OpHead:
		return "HEAD"
	case OpDelete:
		return "DELETE"
	case OpList:
		return "LIST"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// ParseOp reads an operation name, in any case.
func ParseOp(s string) (Op, error) {
	for o := range numOps {
		if strings.EqualFold(s, o.String()) {
			return o, nil
		}
	}
	return 0, fmt.Errorf("operation %q: want GET, PUT, DELETE, LIST or HEAD", s)
}

// Mix is the operation mix: relative weights by operation name
// ({get: 70, put: 30}); they need not sum to 100.
type Mix map[string]float64

// ParseMix reads "get=70,put=30" (or a single operation name: "put").
func ParseMix(s string) (Mix, error) {
	m := Mix{}
	for _, part := range strings.Split(s, ",") {
		name, w, found := strings.Cut(strings.TrimSpace(part), "=")
		v := 1.0
		if found {
			var err error
			if v, err = strconv.ParseFloat(w, 64); err != nil {
				return nil, fmt.Errorf("mix %q: weight of %s: %w", s, name, err)
			}
		}
		m[strings.ToLower(name)] += v
	}
	_, err := m.weights()
	return m, err
}

// weights validates the mix and returns weights indexed by Op.
func (m Mix) weights() ([numOps]float64, error) {
	var w [numOps]float64
	var total float64
	for name, v := range m {
		op, err := ParseOp(name)
		if err != nil {
			return w, fmt.Errorf("mix: %w", err)
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return w, fmt.Errorf("mix: weight of %s must be a non-negative number", name)
		}
		w[op] += v
		total += v
	}
	if total == 0 {
		return w, errors.New("mix: no operation has a positive weight")
	}
	return w, nil
}

// Duration is a time.Duration written as "10s", "1m30s" (or seconds as a
// number) in scenario files.
type Duration time.Duration

// D is the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the "10s" form.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "10s" or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error { return d.parse(strings.Trim(string(b), `"`)) }

// MarshalYAML writes the "10s" form.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// UnmarshalYAML reads "10s" or a number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error { return d.parse(n.Value) }

func (d *Duration) parse(s string) error {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		*d = Duration(v * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// LoadScenario reads a scenario file (YAML or JSON). Unknown fields are
// errors, so a typo does not silently change the workload.
func LoadScenario(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc, err := ParseScenario(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sc, nil
}

// ParseScenario decodes a scenario from YAML or JSON.
func ParseScenario(b []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var sc Scenario
	if err := dec.Decode(&sc); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return &sc, nil
}

// defaults fills unset fields; validate checks the result.
func (sc *Scenario) defaults() {
	if sc.Interval == 0 {
		sc.Interval = Duration(time.Second)
	}
	if sc.Seed == 0 {
		sc.Seed = 1
	}
	for i := range sc.Tenants {
		t := &sc.Tenants[i]
		if t.Name == "" {
			t.Name = fmt.Sprintf("t%d", i+1)
		}
		if t.Region == "" {
			t.Region = "us-east-1"
		}
		if t.Concurrency == 0 {
			t.Concurrency = 1
		}
		if len(t.Mix) == 0 {
			t.Mix = Mix{"put": 1}
		}
		if t.Data.Kind == "" {
			t.Data = datagen.Spec{Kind: datagen.Realistic, Ratio: 2}
		}
		if t.Keys.Count == 0 {
			t.Keys.Count = 1000
		}
		if t.Keys.Prepopulate < 0 || t.Keys.Prepopulate > t.Keys.Count {
			t.Keys.Prepopulate = t.Keys.Count
		}
		if t.Keys.Prefix == "" {
			t.Keys.Prefix = "obj/"
		}
		if t.List.MaxKeys == 0 {
			t.List.MaxKeys = 1000
		}
		if t.Size.Dist == "" && t.Size.Size == "" {
			t.Size = SizeDist{Dist: "fixed", Size: "4KiB"}
		}
		if t.Ramp != nil {
			t.Phases = append(t.Phases, t.Ramp.phases()...)
			t.Ramp = nil
		}
	}
}

func (r Ramp) phases() []Phase {
	if r.Step <= 0 || r.Every <= 0 {
		return nil
	}
	var out []Phase
	dir := 1.0
	if r.To < r.From {
		dir = -1
	}
	for v := r.From; (v-r.To)*dir <= 1e-9; v += r.Step * dir {
		rate := v
		out = append(out, Phase{Duration: r.Every, Rate: &rate})
	}
	return out
}

// Validate fills defaults and checks everything a run needs, so that a
// bad scenario fails before any request is sent.
func (sc *Scenario) Validate() error {
	sc.defaults()
	if len(sc.Tenants) == 0 {
		return errors.New("scenario has no tenants")
	}
	if sc.Trace == nil && sc.Duration <= 0 && slices.ContainsFunc(sc.Tenants, func(t Tenant) bool { return t.Ops <= 0 && len(t.Phases) == 0 }) {
		return errors.New("scenario needs a duration, or ops for every tenant")
	}
	seen := map[string]bool{}
	for i := range sc.Tenants {
		t := &sc.Tenants[i]
		if seen[t.Name] {
			return fmt.Errorf("tenant %q appears twice", t.Name)
		}
		seen[t.Name] = true
		if err := t.validate(sc.Trace != nil); err != nil {
			return fmt.Errorf("tenant %s: %w", t.Name, err)
		}
	}
	if sc.Trace != nil {
		return sc.Trace.validate()
	}
	return nil
}

func (t *Tenant) validate(replay bool) error {
	if t.Endpoint == "" {
		return errors.New("no endpoint")
	}
	if !strings.HasPrefix(t.Endpoint, "http://") && !strings.HasPrefix(t.Endpoint, "https://") {
		return fmt.Errorf("endpoint %q: want http://host:port or https://...", t.Endpoint)
	}
	if _, _, err := t.credentials(); err != nil {
		return err
	}
	if t.Bucket == "" && !replay {
		return errors.New("no bucket")
	}
	if t.Concurrency < 0 || t.Rate < 0 || t.Ops < 0 {
		return errors.New("concurrency, rate and ops must not be negative")
	}
	if _, err := t.Mix.weights(); err != nil {
		return err
	}
	if _, err := t.Size.sampler(); err != nil {
		return err
	}
	for i, p := range t.Phases {
		if p.Duration <= 0 && i < len(t.Phases)-1 {
			return fmt.Errorf("phase %d: needs a duration (only the last may hold until the end)", i+1)
		}
		if p.Rate != nil && *p.Rate < 0 || p.Concurrency != nil && *p.Concurrency < 1 {
			return fmt.Errorf("phase %d: rate must be >= 0 and concurrency >= 1", i+1)
		}
		if len(p.Mix) > 0 {
			if _, err := p.Mix.weights(); err != nil {
				return fmt.Errorf("phase %d: %w", i+1, err)
			}
		}
	}
	return nil
}

// credentials resolves the tenant's keys. Errors never carry a secret.
func (t *Tenant) credentials() (access, secret string, err error) {
	access, secret = t.AccessKey, t.SecretKey
	if t.AccessKeyEnv != "" {
		access = os.Getenv(t.AccessKeyEnv)
	}
	if t.SecretKeyEnv != "" {
		secret = os.Getenv(t.SecretKeyEnv)
	}
	if access == "" || secret == "" {
		return "", "", errors.New("no credentials (access_key/secret_key or access_key_env/secret_key_env)")
	}
	return access, secret, nil
}

// maxConcurrency is the most workers the tenant ever needs.
func (t *Tenant) maxConcurrency() int {
	n := t.Concurrency
	for _, p := range t.Phases {
		if p.Concurrency != nil {
			n = max(n, *p.Concurrency)
		}
	}
	return n
}

// phasesEnd is when the last timed phase ends (0 without phases).
func (t *Tenant) phasesEnd() time.Duration {
	var d time.Duration
	for _, p := range t.Phases {
		d += p.Duration.D()
	}
	return d
}

// runLength is how long the run lasts at most: the duration, or the
// longest tenant's phases.
func (sc *Scenario) runLength() time.Duration {
	d := sc.Duration.D()
	if d > 0 {
		return d
	}
	for _, t := range sc.Tenants {
		if t.Ops == 0 {
			d = max(d, t.Start.D()+t.phasesEnd())
		}
	}
	return d
}

// Redacted is a copy fit for a report: credentials removed.
func (sc *Scenario) Redacted() *Scenario {
	c := *sc
	c.Tenants = slices.Clone(sc.Tenants)
	for i := range c.Tenants {
		c.Tenants[i].AccessKey, c.Tenants[i].SecretKey = "", ""
	}
	return &c
}
