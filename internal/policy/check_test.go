package policy

import (
	"maps"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

func checkOne(t *testing.T, src string) *Policy {
	t.Helper()
	ps, err := ParseAndCheck("pol", src, testVocab())
	if err != nil {
		t.Fatalf("ParseAndCheck(%q): %v", src, err)
	}
	return ps[0]
}

func TestCheckValues(t *testing.T) {
	tests := []struct {
		src    string
		stages []filter.Stage
		values []filter.Params
	}{
		// Defaults applied; an action without ON runs at the filter's first stage.
		{"FOR TENANT:t1 DO SET compression, SET encryption", []filter.Stage{"gateway", "storage"},
			[]filter.Params{{"engine": "zstd", "level": "3", "frame": "1048576"}, {}}},
		// Names and enum values are matched ignoring case and made canonical.
		{"FOR TENANT T1 WHEN OBJECT_TYPE=docs DO SET COMPRESSION WITH ENGINE=GZIP, level=9, frame=512KiB ON OBJECT", []filter.Stage{"storage"},
			[]filter.Params{{"engine": "gzip", "level": "9", "frame": "524288"}}},
		{"FOR TENANT t1 DO SET caching WITH ttl=1.5h, max=1.5GB, hot=5%, ssd=YES, label=\"a b\", policy=lfu", []filter.Stage{"gateway"},
			[]filter.Params{{"ttl": "1h30m0s", "max": "1500000000", "hot": "0.05", "ssd": "true", "label": "a b", "policy": "LFU"}}},
		{"FOR TENANT t1 DO SET caching WITH hot=0.25, ssd=0, ttl=3s", []filter.Stage{"gateway"},
			[]filter.Params{{"ttl": "3s", "hot": "0.25", "ssd": "false", "policy": "LRU"}}},
		{"FOR BUCKET t1/b1 DO DELETE compression", []filter.Stage{""}, []filter.Params{nil}},
		// SLOs.
		{"FOR TENANT t1 DO SET bandwidth WITH get=30MB/s, put=10MBps, reservation=1GiB/s, limit=100, weight=2.5, ops=500/s", []filter.Stage{""},
			[]filter.Params{{"get": "30000000", "put": "10000000", "reservation": "1073741824", "limit": "100", "weight": "2.5", "ops": "500"}}},
		{"FOR VOLUME v1 DO SET throttle WITH read_bw=3MB/s, write_bw=3MB/s, read_iops=3000, write_iops=3000iops", []filter.Stage{""},
			[]filter.Params{{"read_bw": "3000000", "write_bw": "3000000", "read_iops": "3000", "write_iops": "3000"}}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			p := checkOne(t, tt.src)
			for i, a := range p.Actions {
				if a.Stage != tt.stages[i] {
					t.Errorf("action %d stage = %q, want %q", i, a.Stage, tt.stages[i])
				}
				if !maps.Equal(a.Values, tt.values[i]) {
					t.Errorf("action %d values = %v, want %v", i, a.Values, tt.values[i])
				}
			}
		})
	}
}

func TestCheckClassifies(t *testing.T) {
	p := checkOne(t, "FOR TENANT t1 WHEN OBJECT_SIZE > 1MB DO SET compression")
	if p.Dynamic || p.Trigger != nil || p.objPred == nil {
		t.Errorf("object-only condition: Dynamic=%v Trigger=%v pred=%v", p.Dynamic, p.Trigger, p.objPred)
	}
	p = checkOne(t, "FOR TENANT t1 WHEN (get_ops > 5 OR put_bw > 1MB/s) AND OBJECT_TYPE=DOCS AND get_lat < 1s DO SET caching TRANSIENT")
	if !p.Dynamic {
		t.Fatal("a metric term makes the policy dynamic")
	}
	if got := p.Trigger.String(); got != "(get_ops > 5 OR put_bw > 1MB/s) AND get_lat < 1s" {
		t.Errorf("Trigger = %s", got)
	}
	if p.objPred == nil || p.objPred.text != "OBJECT_TYPE=DOCS" {
		t.Errorf("object part = %+v", p.objPred)
	}
	m := p.Trigger.(*BinaryCond).X.(*BinaryCond).Y.(*MetricCmp)
	if m.Info.Name != "put_bw" || m.Info.Unit != KindByteRate || m.Threshold != 1e6 {
		t.Errorf("put_bw term = %+v", m)
	}
	p = checkOne(t, "FOR TENANT t1 WHEN GET_LAT > 300ms AND compressibility < 40% AND ops >= 10ops DO SET compression")
	var th []float64
	walkMetrics(p.Trigger, func(m *MetricCmp) { th = append(th, m.Threshold) })
	if len(th) != 3 || th[0] != 0.3 || th[1] != 0.4 || th[2] != 10 {
		t.Errorf("thresholds = %v, want [0.3 0.4 10]", th)
	}
	if p.Trigger.(*BinaryCond).X.(*BinaryCond).X.(*MetricCmp).Info.Name != "get_lat" {
		t.Error("metric names are made canonical")
	}
}

func TestCheckTargets(t *testing.T) {
	p := checkOne(t, "FOR OBJECT t1/b1/a/b/c.txt, BUCKET t1/b2, BUCKET b1, TENANT t2, G:gold, ALL DO SET noop")
	got := [][3]string{}
	for _, tg := range p.Targets {
		got = append(got, [3]string{tg.Tenant, tg.Bucket, tg.Key})
	}
	want := [][3]string{{"t1", "b1", "a/b/c.txt"}, {"t1", "b2", ""}, {"", "b1", ""}, {"t2", "", ""}, {"", "", ""}, {"", "", ""}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("target %d split = %v, want %v", i, got[i], want[i])
		}
	}
	v := testVocab()
	v.Tenants, v.Buckets, v.AnyTarget = nil, nil, true
	if _, err := ParseAndCheck("", "FOR TENANT nobody, BUCKET x/y DO SET noop", v); err != nil {
		t.Errorf("AnyTarget: %v", err)
	}
}

// TestCheckErrors pins the exact message of every validation error.
func TestCheckErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"FOR TENANT t9 DO SET compression", `pol:1:12: unknown tenant "t9" (did you mean t1?)
FOR TENANT t9 DO SET compression
           ^~`},
		{"FOR TENANT t1/b1 DO SET compression", `pol:1:12: a tenant name cannot contain '/' (for a bucket write BUCKET t1/b1)
FOR TENANT t1/b1 DO SET compression
           ^~~~~`},
		{"FOR BUCKET t1/b9 DO SET compression", `pol:1:12: unknown bucket "t1/b9" (did you mean t1/b1?)
FOR BUCKET t1/b9 DO SET compression
           ^~~~~`},
		{"FOR BUCKET t4/b1 DO SET compression", `pol:1:12: unknown tenant "t4" (did you mean t1?)
FOR BUCKET t4/b1 DO SET compression
           ^~~~~`},
		{"FOR BUCKET b9 DO SET compression", `pol:1:12: unknown bucket "b9" (did you mean b1?)
FOR BUCKET b9 DO SET compression
           ^~`},
		{"FOR BUCKET t1/b1/k DO SET compression", `pol:1:12: a bucket target is TENANT/BUCKET or BUCKET, found "t1/b1/k"
FOR BUCKET t1/b1/k DO SET compression
           ^~~~~~~`},
		{"FOR OBJECT t1/b1 DO SET compression", `pol:1:12: an object target is TENANT/BUCKET/KEY, found "t1/b1"
FOR OBJECT t1/b1 DO SET compression
           ^~~~~`},
		{"FOR G:gld DO SET compression", `pol:1:7: unknown group "gld" (did you mean gold?)
FOR G:gld DO SET compression
      ^~~`},
		{"FOR VOLUME v3 DO SET xor", `pol:1:12: unknown volume "v3" (did you mean v1?)
FOR VOLUME v3 DO SET xor
           ^~`},
		{"FOR TENANT zzzzzz DO SET xor", `pol:1:12: unknown tenant "zzzzzz"
FOR TENANT zzzzzz DO SET xor
           ^~~~~~`},
		{"FOR TENANT t1, VOLUME v1 DO SET xor", `pol:1:16: a policy cannot mix volume targets with tenant, bucket or object targets (TENANT t1 is first)
FOR TENANT t1, VOLUME v1 DO SET xor
               ^~~~~~`},
		{"FOR TENANT t1 DO SET compresion", `pol:1:22: unknown filter "compresion" (did you mean compression?)
FOR TENANT t1 DO SET compresion
                     ^~~~~~~~~~`},
		{"FOR TENANT t1 DO SET encrypt", `pol:1:22: unknown filter "encrypt" (did you mean encryption?)
FOR TENANT t1 DO SET encrypt
                     ^~~~~~~`},
		{"FOR TENANT t1 DO SET bandwith WITH get=1MB/s", `pol:1:22: unknown filter "bandwith" (did you mean bandwidth?)
FOR TENANT t1 DO SET bandwith WITH get=1MB/s
                     ^~~~~~~~`},
		{"FOR TENANT t1 WHEN get_opps > 5 DO SET compression", `pol:1:20: unknown metric "get_opps" (did you mean get_ops?)
FOR TENANT t1 WHEN get_opps > 5 DO SET compression
                   ^~~~~~~~`},
		{"FOR TENANT t1 WHEN OBJECT_TPYE > 5 DO SET compression", `pol:1:20: unknown metric "OBJECT_TPYE" (did you mean OBJECT_TYPE?)
FOR TENANT t1 WHEN OBJECT_TPYE > 5 DO SET compression
                   ^~~~~~~~~~~`},
		{"FOR TENANT t1 WHEN get_bw > 5ms DO SET compression", `pol:1:29: metric get_bw wants a rate such as 10MB/s, found 5ms (a duration)
FOR TENANT t1 WHEN get_bw > 5ms DO SET compression
                            ^~~`},
		{"FOR TENANT t1 WHEN get_lat > 5 DO SET compression", `pol:1:30: metric get_lat wants a duration such as 300ms, found 5 without a unit
FOR TENANT t1 WHEN get_lat > 5 DO SET compression
                             ^`},
		{"FOR TENANT t1 WHEN get_lat > 5XB DO SET compression", `pol:1:30: unknown unit "XB" in 5XB (sizes take B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; rates a size unit and /s or ps; durations ns, us, ms, s, m, h, d; percentages %)
FOR TENANT t1 WHEN get_lat > 5XB DO SET compression
                             ^~~`},
		{"FOR TENANT t1 WHEN OBJECT_SIZE > 10MB/s DO SET compression", `pol:1:34: OBJECT_SIZE wants a size such as 10MB, found 10MB/s (a rate)
FOR TENANT t1 WHEN OBJECT_SIZE > 10MB/s DO SET compression
                                 ^~~~~~`},
		{"FOR TENANT t1 WHEN OBJECT_TYPE = DOC DO SET compression", `pol:1:34: unknown object type "DOC" (did you mean DOCS?)
FOR TENANT t1 WHEN OBJECT_TYPE = DOC DO SET compression
                                 ^~~`},
		{`FOR TENANT t1 WHEN OBJECT_NAME = "[a" DO SET compression`, `pol:1:34: bad OBJECT_NAME pattern "[a": unterminated or empty '[...]'
FOR TENANT t1 WHEN OBJECT_NAME = "[a" DO SET compression
                                 ^~~~`},
		{"FOR TENANT t1 WHEN OBJECT_TAG = x-amz-meta- DO SET compression", `pol:1:33: OBJECT_TAG needs a key after x-amz-meta-
FOR TENANT t1 WHEN OBJECT_TAG = x-amz-meta- DO SET compression
                                ^~~~~~~~~~~`},
		{"FOR TENANT t1 WHEN put_ops > 3 OR OBJECT_SIZE > 1MB DO SET compression", `pol:1:32: object conditions can be combined with metric conditions only by AND
FOR TENANT t1 WHEN put_ops > 3 OR OBJECT_SIZE > 1MB DO SET compression
                               ^~`},
		{"FOR TENANT t1 WHEN (put_ops > 3 AND OBJECT_SIZE > 1MB) OR get_ops > 1 DO SET compression", `pol:1:56: object conditions can be combined with metric conditions only by AND
FOR TENANT t1 WHEN (put_ops > 3 AND OBJECT_SIZE > 1MB) OR get_ops > 1 DO SET compression
                                                       ^~`},
		{"FOR TENANT t1 DO SET compression WITH levl=3", `pol:1:39: unknown parameter "levl" for filter compression (did you mean level?)
FOR TENANT t1 DO SET compression WITH levl=3
                                      ^~~~`},
		{"FOR TENANT t1 DO SET compression WITH level=3, level=4", `pol:1:48: parameter level given twice
FOR TENANT t1 DO SET compression WITH level=3, level=4
                                               ^~~~~`},
		{"FOR TENANT t1 DO SET compression WITH level=42", `pol:1:45: parameter level of filter compression must be between 1 and 22, found 42
FOR TENANT t1 DO SET compression WITH level=42
                                            ^~`},
		{"FOR TENANT t1 DO SET compression WITH level=4.5", `pol:1:45: parameter level of filter compression wants an integer, found 4.5
FOR TENANT t1 DO SET compression WITH level=4.5
                                            ^~~`},
		{"FOR TENANT t1 DO SET compression WITH level=fast", `pol:1:45: parameter level of filter compression wants an integer, found "fast"
FOR TENANT t1 DO SET compression WITH level=fast
                                            ^~~~`},
		{"FOR TENANT t1 DO SET compression WITH engine=gzp", `pol:1:46: parameter engine of filter compression must be one of gzip, zstd, lz4, found "gzp" (did you mean gzip?)
FOR TENANT t1 DO SET compression WITH engine=gzp
                                             ^~~`},
		{"FOR TENANT t1 DO SET compression WITH frame=10MB/s", `pol:1:45: parameter frame of filter compression wants a size such as 10MB, found 10MB/s (a rate)
FOR TENANT t1 DO SET compression WITH frame=10MB/s
                                            ^~~~~~`},
		{"FOR TENANT t1 DO SET compression WITH frame=1KB", `pol:1:45: parameter frame of filter compression must be between 4KiB and 64MiB, found 1KB
FOR TENANT t1 DO SET compression WITH frame=1KB
                                            ^~~`},
		{"FOR TENANT t1 DO SET compression WITH frame=99999999999999999999PB", `pol:1:45: 99999999999999999999PB is too large
FOR TENANT t1 DO SET compression WITH frame=99999999999999999999PB
                                            ^~~~~~~~~~~~~~~~~~~~~~`},
		{"FOR TENANT t1 DO SET caching WITH ttl=2w", `pol:1:39: unknown unit "w" in 2w (sizes take B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; rates a size unit and /s or ps; durations ns, us, ms, s, m, h, d; percentages %)
FOR TENANT t1 DO SET caching WITH ttl=2w
                                      ^~`},
		{"FOR TENANT t1 DO SET caching WITH ttl=30", `pol:1:39: parameter ttl of filter caching wants a duration such as 300ms, found 30 without a unit
FOR TENANT t1 DO SET caching WITH ttl=30
                                      ^~`},
		{"FOR TENANT t1 DO SET caching WITH ttl=99999999999h", `pol:1:39: 99999999999h is too large
FOR TENANT t1 DO SET caching WITH ttl=99999999999h
                                      ^~~~~~~~~~~~`},
		{"FOR TENANT t1 DO SET caching WITH hot=150%", `pol:1:39: parameter hot of filter caching must be between 0 and 1, found 150%
FOR TENANT t1 DO SET caching WITH hot=150%
                                      ^~~~`},
		{"FOR TENANT t1 DO SET caching WITH ssd=maybe", `pol:1:39: parameter ssd of filter caching wants true or false, found "maybe"
FOR TENANT t1 DO SET caching WITH ssd=maybe
                                      ^~~~~`},
		{"FOR TENANT t1 DO SET encryption WITH key=1", `pol:1:38: filter encryption takes no parameters
FOR TENANT t1 DO SET encryption WITH key=1
                                     ^~~`},
		{"FOR TENANT t1 DO SET caching ON storage", `pol:1:33: filter caching does not run at stage storage (it runs at gateway)
FOR TENANT t1 DO SET caching ON storage
                                ^~~~~~~`},
		{"FOR TENANT t1 DO DELETE compression WITH level=3", `pol:1:37: DELETE takes no parameters
FOR TENANT t1 DO DELETE compression WITH level=3
                                    ^~~~`},
		{"FOR TENANT t1 DO DELETE compression ON proxy", `pol:1:40: DELETE removes compression at every stage; ON is not allowed
FOR TENANT t1 DO DELETE compression ON proxy
                                       ^~~~~`},
		{"FOR TENANT t1 DO DELETE compression CALLABLE", `pol:1:37: DELETE cannot be CALLABLE
FOR TENANT t1 DO DELETE compression CALLABLE
                                    ^~~~~~~~`},
		{"FOR TENANT t1 DO SET compression TRANSIENT", `pol:1:34: TRANSIENT needs a metric trigger in WHEN: a static policy is always in force
FOR TENANT t1 DO SET compression TRANSIENT
                                 ^~~~~~~~~`},
		{"FOR TENANT t1 WHEN OBJECT_TYPE=DOCS DO SET compression TRANSIENT", `pol:1:56: TRANSIENT needs a metric trigger in WHEN: a static policy is always in force
FOR TENANT t1 WHEN OBJECT_TYPE=DOCS DO SET compression TRANSIENT
                                                       ^~~~~~~~~`},
		{"FOR TENANT t1 WHEN get_ops > 5 DO SET caching CALLABLE", `pol:1:47: CALLABLE cannot be used with a metric trigger: a callable filter runs when a request asks for it
FOR TENANT t1 WHEN get_ops > 5 DO SET caching CALLABLE
                                              ^~~~~~~~`},
		{"FOR TENANT t1 DO SET compression, SET COMPRESSION", `pol:1:39: compression appears twice in this policy
FOR TENANT t1 DO SET compression, SET COMPRESSION
                                      ^~~~~~~~~~~`},
		{"FOR BUCKET t1/b1 DO SET bandwidth WITH get=1MB/s", `pol:1:5: bandwidth is a tenant SLO: its targets are TENANT, GROUP or ALL TENANTS, not BUCKET
FOR BUCKET t1/b1 DO SET bandwidth WITH get=1MB/s
    ^~~~~~`},
		{"FOR VOLUME v1 DO SET bandwidth WITH get=1MB/s", `pol:1:5: bandwidth is a tenant SLO: its targets are TENANT, GROUP or ALL TENANTS, not VOLUME
FOR VOLUME v1 DO SET bandwidth WITH get=1MB/s
    ^~~~~~`},
		{"FOR TENANT t1 DO SET throttle WITH read_bw=1MB/s", `pol:1:5: throttle is a volume SLO: its targets are VOLUME or ALL VOLUMES, not TENANT
FOR TENANT t1 DO SET throttle WITH read_bw=1MB/s
    ^~~~~~`},
		{"FOR ALL BUCKETS DO SET bandwidth WITH get=1MB/s", `pol:1:5: bandwidth is a tenant SLO: its targets are TENANT, GROUP or ALL TENANTS, not ALL BUCKETS
FOR ALL BUCKETS DO SET bandwidth WITH get=1MB/s
    ^~~`},
		{"FOR TENANT t1 DO SET bandwidth", `pol:1:22: SET bandwidth needs parameters (get, put, reservation, limit, weight, ops, background)
FOR TENANT t1 DO SET bandwidth
                     ^~~~~~~~~`},
		{"FOR TENANT t1 DO SET bandwidth WITH gte=1MB/s", `pol:1:37: unknown parameter "gte" for bandwidth (did you mean get?)
FOR TENANT t1 DO SET bandwidth WITH gte=1MB/s
                                    ^~~`},
		{"FOR TENANT t1 DO SET bandwidth WITH get=1MB", `pol:1:41: parameter get of bandwidth wants a rate such as 10MB/s, found 1MB (a size)
FOR TENANT t1 DO SET bandwidth WITH get=1MB
                                        ^~~`},
		{"FOR TENANT t1 DO SET bandwidth WITH weight=0", `pol:1:44: parameter weight of bandwidth must be between 0.001 and 1000000, found 0
FOR TENANT t1 DO SET bandwidth WITH weight=0
                                           ^`},
		{"FOR TENANT t1 DO SET bandwidth WITH get=1MB/s ON proxy", `pol:1:50: bandwidth is an SLO, not a pipeline filter: ON is not allowed
FOR TENANT t1 DO SET bandwidth WITH get=1MB/s ON proxy
                                                 ^~~~~`},
		{"FOR TENANT t1 DO SET bandwidth WITH get=1MB/s TO OBJECT_SIZE > 1MB", `pol:1:50: object conditions do not apply to bandwidth (an SLO)
FOR TENANT t1 DO SET bandwidth WITH get=1MB/s TO OBJECT_SIZE > 1MB
                                                 ^~~~~~~~~~~`},
		{"FOR VOLUME v1 WHEN OBJECT_SIZE > 1MB DO SET xor", `pol:1:20: object conditions do not apply to volumes
FOR VOLUME v1 WHEN OBJECT_SIZE > 1MB DO SET xor
                   ^~~~~~~~~~~`},
		// The error of a later policy points into its own line.
		{"FOR TENANT t1 DO SET noop\n\nFOR TENANT t2 DO SET noop WITH x=1", `pol:3:32: filter noop takes no parameters
FOR TENANT t2 DO SET noop WITH x=1
                               ^`},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			ps, err := Parse("pol", tt.src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			err = Check(ps, testVocab())
			if err == nil {
				t.Fatalf("Check succeeded: %v", ps)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tt.want)
			}
			if ps[len(ps)-1].checked {
				t.Error("a policy that failed Check is marked checked")
			}
		})
	}
}

func TestCheckBadDefault(t *testing.T) {
	v := testVocab()
	v.Filters = filter.NewRegistry(&filter.Info{Name: "f", Stages: []filter.Stage{filter.StageGateway},
		Params: []filter.ParamSpec{{Name: "size", Type: filter.TypeSize, Default: "lots"}}})
	_, err := ParseAndCheck("", "FOR TENANT t1 DO SET f", v)
	if err == nil || !strings.Contains(err.Error(), `filter f has a bad default for size: parameter size of filter f wants a size such as 10MB, found "lots"`) {
		t.Errorf("error = %v", err)
	}
}

func TestSuggest(t *testing.T) {
	cands := []string{"compression", "encryption", "caching", "noop", "t1", "T1", "gold"}
	tests := map[string]string{
		"compresion":  "compression", // deletion
		"comrpession": "compression", // transposition
		"ENCRYPTION":  "encryption",  // case only
		"encrypt":     "encryption",  // prefix
		"t9":          "t1",          // ties go to the same case
		"nop":         "noop",
		"xyz":         "",
		"go":          "",
		"":            "",
	}
	for word, want := range tests {
		if got := suggest(word, cands); got != want {
			t.Errorf("suggest(%q) = %q, want %q", word, got, want)
		}
	}
}
