package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

func parseOne(t *testing.T, src string) *Policy {
	t.Helper()
	ps, err := Parse("pol", src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	if len(ps) != 1 {
		t.Fatalf("Parse(%q): %d policies, want 1", src, len(ps))
	}
	return ps[0]
}

// TestParseValid covers every grammar form and every example of the
// sources (Crystal's and the IOStack paper's) and DESIGN.md.
func TestParseValid(t *testing.T) {
	tests := []struct {
		src  string
		want string // canonical rendering
		chk  func(t *testing.T, p *Policy)
	}{
		// Crystal's forms.
		{"FOR TENANT:t1 DO SET compression", "FOR TENANT t1 DO SET compression", func(t *testing.T, p *Policy) {
			tg := p.Targets[0]
			if tg.Kind != TargetTenant || tg.Name != "t1" || tg.NamePos != 11 {
				t.Errorf("target = %+v", tg)
			}
			a := p.Actions[0]
			if a.Verb != VerbSet || a.Filter != "compression" || a.FilterPos != 21 || a.StageWord != "" {
				t.Errorf("action = %+v", a)
			}
		}},
		{"FOR CONTAINER:t1/c1 DO SET encryption", "FOR CONTAINER t1/c1 DO SET encryption", func(t *testing.T, p *Policy) {
			if tg := p.Targets[0]; tg.Kind != TargetBucket || tg.Keyword != "CONTAINER" || tg.Name != "t1/c1" {
				t.Errorf("target = %+v", tg)
			}
		}},
		{"FOR G:1 DO SET caching", "FOR G:1 DO SET caching", func(t *testing.T, p *Policy) {
			if tg := p.Targets[0]; tg.Kind != TargetGroup || tg.Name != "1" {
				t.Errorf("target = %+v", tg)
			}
		}},
		{"FOR TENANT t1 DO SET compression TO OBJECT_TYPE=DOCS, OBJECT_SIZE>10MB",
			"FOR TENANT t1 DO SET compression TO OBJECT_TYPE=DOCS, OBJECT_SIZE>10MB", func(t *testing.T, p *Policy) {
				if len(p.To) != 2 || p.To[0].Field != FieldType || p.To[0].Value.Raw != "DOCS" ||
					p.To[1].Field != FieldSize || p.To[1].Op != OpGT || p.To[1].Value.Raw != "10MB" {
					t.Errorf("To = %v", p.To)
				}
			}},
		{"FOR TENANT t1 WHEN put_ops > 3 DO SET compression TRANSIENT", "FOR TENANT t1 WHEN put_ops > 3 DO SET compression TRANSIENT", func(t *testing.T, p *Policy) {
			m, ok := p.When.(*MetricCmp)
			if !ok || m.Metric != "put_ops" || m.Op != OpGT || m.Value.Raw != "3" {
				t.Errorf("When = %#v", p.When)
			}
			if p.Actions[0].Mode != ModeTransient {
				t.Errorf("mode = %q", p.Actions[0].Mode)
			}
		}},
		{"FOR BUCKET t1/b1 DO DELETE compression", "FOR BUCKET t1/b1 DO DELETE compression", func(t *testing.T, p *Policy) {
			if p.Actions[0].Verb != VerbDelete {
				t.Errorf("verb = %q", p.Actions[0].Verb)
			}
		}},
		// The paper's forms.
		{"FOR TENANT T1 WHEN OBJECT_TYPE=DOCS DO SET COMPRESSION ON PROXY, SET ENCRYPTION",
			"FOR TENANT T1 WHEN OBJECT_TYPE=DOCS DO SET COMPRESSION ON PROXY, SET ENCRYPTION", func(t *testing.T, p *Policy) {
				if len(p.Actions) != 2 || p.Actions[0].Stage != filter.StageGateway || p.Actions[0].StageWord != "PROXY" || p.Actions[1].StageWord != "" {
					t.Errorf("actions = %v", p.Actions)
				}
				if o, ok := p.When.(*ObjectCmp); !ok || o.Field != FieldType || o.Value.Raw != "DOCS" {
					t.Errorf("When = %#v", p.When)
				}
			}},
		{"p1: FOR ALL TENANTS DO SET encryption", "p1: FOR ALL TENANTS DO SET encryption", func(t *testing.T, p *Policy) {
			if p.Name != "p1" || p.NamePos != 0 || p.Targets[0].Kind != TargetAll || p.Targets[0].Scope != TargetTenant {
				t.Errorf("policy = %+v target = %+v", p, p.Targets[0])
			}
		}},
		{"FOR TENANT t1 DO SET bandwidth WITH get=30MB/s, put=10MB/s", "FOR TENANT t1 DO SET bandwidth WITH get=30MB/s, put=10MB/s", func(t *testing.T, p *Policy) {
			ps := p.Actions[0].Params
			if len(ps) != 2 || ps[0].Name != "get" || ps[0].Value.Raw != "30MB/s" || !ps[0].Value.Number || ps[1].Name != "put" {
				t.Errorf("params = %v", ps)
			}
		}},
		{"FOR VOLUME v1 DO SET throttle WITH read_bw=3MB/s, write_bw=3MB/s, read_iops=3000, write_iops=3000",
			"FOR VOLUME v1 DO SET throttle WITH read_bw=3MB/s, write_bw=3MB/s, read_iops=3000, write_iops=3000", func(t *testing.T, p *Policy) {
				if p.Targets[0].Kind != TargetVolume || len(p.Actions[0].Params) != 4 {
					t.Errorf("policy = %v", p)
				}
			}},
		// DESIGN.md and the remaining grammar forms.
		{"for tenant t1 when get_ops >= 5 and (put_bw < 10MBps or get_lat > 300ms) do set caching with ttl=5m on gateway persistent",
			"FOR TENANT t1 WHEN get_ops >= 5 AND (put_bw < 10MBps OR get_lat > 300ms) DO SET caching WITH ttl=5m ON gateway PERSISTENT", func(t *testing.T, p *Policy) {
				b, ok := p.When.(*BinaryCond)
				if !ok || b.Op != "AND" {
					t.Fatalf("When = %#v", p.When)
				}
				if or, ok := b.Y.(*BinaryCond); !ok || or.Op != "OR" {
					t.Errorf("When.Y = %#v", b.Y)
				}
			}},
		{"FOR OBJECT t1/b1/logs/2024/a.log, TENANT t2 DO SET compression WITH engine=gzip, level=9 ON object, SET encryption ON storage",
			"FOR OBJECT t1/b1/logs/2024/a.log, TENANT t2 DO SET compression WITH engine=gzip, level=9 ON object, SET encryption ON storage", func(t *testing.T, p *Policy) {
				if p.Targets[0].Kind != TargetObject || p.Targets[0].Name != "t1/b1/logs/2024/a.log" || p.Targets[1].Kind != TargetTenant {
					t.Errorf("targets = %v", p.Targets)
				}
				if p.Actions[0].Stage != filter.StageStorage || len(p.Actions[0].Params) != 2 || p.Actions[1].Stage != filter.StageStorage {
					t.Errorf("actions = %v", p.Actions)
				}
			}},
		{"FOR ALL DO SET noop CALLABLE", "FOR ALL DO SET noop CALLABLE", func(t *testing.T, p *Policy) {
			if !p.Actions[0].Callable || p.Targets[0].ScopeWord != "" {
				t.Errorf("policy = %v", p)
			}
		}},
		{"FOR ALL BUCKETS WHEN OBJECT_NAME=*.log AND OBJECT_TAG=x-amz-meta-class:cold DO SET compression",
			"FOR ALL BUCKETS WHEN OBJECT_NAME=*.log AND OBJECT_TAG=x-amz-meta-class:cold DO SET compression", func(t *testing.T, p *Policy) {
				b := p.When.(*BinaryCond)
				tag := b.Y.(*ObjectCmp)
				if tag.Field != FieldTag || tag.Value.Raw != "x-amz-meta-class" || tag.TagValue == nil || tag.TagValue.Raw != "cold" {
					t.Errorf("tag = %+v", tag)
				}
				if p.Targets[0].Scope != TargetBucket {
					t.Errorf("scope = %v", p.Targets[0].Scope)
				}
			}},
		{"FOR ALL VOLUMES DO SET xor", "FOR ALL VOLUMES DO SET xor", func(t *testing.T, p *Policy) {
			if p.Targets[0].Scope != TargetVolume {
				t.Errorf("scope = %v", p.Targets[0].Scope)
			}
		}},
		{"FOR GROUP gold, BUCKET b1 WHEN OBJECT_SIZE <= 1.5GiB AND OBJECT_TAG=tier DO SET caching WITH hot=5%, ssd=yes",
			"FOR GROUP gold, BUCKET b1 WHEN OBJECT_SIZE<=1.5GiB AND OBJECT_TAG=tier DO SET caching WITH hot=5%, ssd=yes", nil},
		{`"my policy": FOR TENANT "acme" DO SET caching WITH label="hello world"`,
			`"my policy": FOR TENANT acme DO SET caching WITH label="hello world"`, func(t *testing.T, p *Policy) {
				if p.Name != "my policy" || p.Actions[0].Params[0].Value.Raw != "hello world" || !p.Actions[0].Params[0].Value.Quoted {
					t.Errorf("policy = %+v", p)
				}
			}},
		{"FOR TENANT t1 WHEN compressibility < 0.5 AND OBJECT_TYPE != IMAGES DO SET compression",
			"FOR TENANT t1 WHEN compressibility < 0.5 AND OBJECT_TYPE!=IMAGES DO SET compression", nil},
		{"FOR TENANT t1 WHEN a > 1 OR b > 2 AND c == 3 DO SET x", "FOR TENANT t1 WHEN a > 1 OR (b > 2 AND c = 3) DO SET x", func(t *testing.T, p *Policy) {
			if b := p.When.(*BinaryCond); b.Op != "OR" || b.Y.(*BinaryCond).Op != "AND" {
				t.Errorf("AND must bind tighter than OR: %v", p.When)
			}
		}},
		{"FOR TENANT t1 WHEN ((a > 1)) AND (b > 2 AND c != 3) DO SET x", "FOR TENANT t1 WHEN a > 1 AND (b > 2 AND c != 3) DO SET x", nil},
		{"FOR TENANT t1 DO SET x TO OBJECT_TYPE=DOCS AND OBJECT_NAME=\"a b*\"", `FOR TENANT t1 DO SET x TO OBJECT_TYPE=DOCS, OBJECT_NAME="a b*"`, nil},
		{"FOR TENANT t1 DO SET x WITH a=1 ON proxy TRANSIENT CALLABLE, DELETE y", "FOR TENANT t1 DO SET x WITH a=1 ON proxy TRANSIENT CALLABLE, DELETE y", nil},
		{"FOR TENANT all, TENANT g, G g DO SET \"WITH\"", `FOR TENANT all, TENANT g, G:g DO SET "WITH"`, func(t *testing.T, p *Policy) {
			if p.Targets[0].Name != "all" || p.Targets[2].Kind != TargetGroup || p.Actions[0].Filter != "WITH" {
				t.Errorf("policy = %v", p)
			}
		}},
		{"FOR BUCKET 2024-logs DO SET x WITH size=512KB, \"when\"=\"DO\"", `FOR BUCKET 2024-logs DO SET x WITH size=512KB, "when"="DO"`, nil},
		{"  FOR TENANT t1 DO SET x   # a comment", "FOR TENANT t1 DO SET x", func(t *testing.T, p *Policy) {
			if p.Text != "FOR TENANT t1 DO SET x" || p.Pos != 2 {
				t.Errorf("Text = %q, Pos = %d", p.Text, p.Pos)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			p := parseOne(t, tt.src)
			if got := p.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if tt.chk != nil {
				tt.chk(t, p)
			}
			// The rendering parses back to the same rendering.
			if again := parseOne(t, p.String()).String(); again != tt.want {
				t.Errorf("re-parsed String() = %q", again)
			}
		})
	}
}

func TestParseMany(t *testing.T) {
	text := "# policies for tenant t1\n" +
		"p1: FOR TENANT t1 DO SET encryption ON storage\n" +
		"\n" +
		"   # compression at the gateway\r\n" +
		"p2: FOR TENANT t1 DO SET compression WITH engine=zstd,\n" +
		"\n" +
		"       level=9 ON proxy,   # a trailing comma continues the policy\n" +
		"    SET noop\n" +
		"p3: FOR BUCKET t1/c1 \\\n" +
		"      DO DELETE compression\n"
	ps, err := Parse("t1.policy", text)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		line int
		str  string
	}{
		{"p1", 2, "p1: FOR TENANT t1 DO SET encryption ON storage"},
		{"p2", 5, "p2: FOR TENANT t1 DO SET compression WITH engine=zstd, level=9 ON proxy, SET noop"},
		{"p3", 9, "p3: FOR BUCKET t1/c1 DO DELETE compression"},
	}
	if len(ps) != len(want) {
		t.Fatalf("got %d policies, want %d", len(ps), len(want))
	}
	for i, w := range want {
		if ps[i].Name != w.name || ps[i].Line != w.line || ps[i].String() != w.str {
			t.Errorf("policy %d = %q line %d: %q; want %q line %d: %q", i, ps[i].Name, ps[i].Line, ps[i], w.name, w.line, w.str)
		}
	}
	if !strings.HasPrefix(ps[2].Text, "p3: FOR BUCKET t1/c1 \\\n") {
		t.Errorf("Text keeps the source as written, got %q", ps[2].Text)
	}
	if ps, err := Parse("", "\n# nothing\n\n"); err != nil || len(ps) != 0 {
		t.Errorf("empty text: %v, %v", ps, err)
	}
}

// TestParseErrors pins the exact message, position, caret and suggestion
// of every syntax error the parser gives.
func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"FRO TENANT t1 DO SET x", `pol:1:1: expected FOR, found "FRO" (did you mean FOR?)
FRO TENANT t1 DO SET x
^~~`},
		{"TENANT:t1 DO SET x", `pol:1:1: missing FOR before TENANT
TENANT:t1 DO SET x
^~~~~~`},
		{"FOR T1 DO SET x", `pol:1:5: expected a target (TENANT, BUCKET, CONTAINER, OBJECT, GROUP, G, VOLUME or ALL), found "T1" (did you mean TENANT T1?)
FOR T1 DO SET x
    ^~`},
		{"FOR TENAN t1 DO SET x", `pol:1:5: expected a target (TENANT, BUCKET, CONTAINER, OBJECT, GROUP, G, VOLUME or ALL), found "TENAN" (did you mean TENANT?)
FOR TENAN t1 DO SET x
    ^~~~~`},
		{"FOR TENANT DO SET x", `pol:1:12: expected a tenant name, found keyword DO
FOR TENANT DO SET x
           ^~`},
		{"FOR TENANT t1 SET x", `pol:1:15: expected WHEN or DO after the targets, found keyword SET
FOR TENANT t1 SET x
              ^~~`},
		{"FOR TENANT t1 DOO SET x", `pol:1:15: expected WHEN or DO after the targets, found "DOO" (did you mean DO?)
FOR TENANT t1 DOO SET x
              ^~~`},
		{"FOR TENANT t1 WHEN DO SET x", `pol:1:20: expected a condition (a metric, OBJECT_TYPE, OBJECT_SIZE, OBJECT_NAME or OBJECT_TAG), found keyword DO
FOR TENANT t1 WHEN DO SET x
                   ^~`},
		{"FOR TENANT t1 WHEN get_ops 5 DO SET x", `pol:1:28: expected a comparison (<, <=, >, >=, =, !=) after get_ops, found 5
FOR TENANT t1 WHEN get_ops 5 DO SET x
                           ^`},
		{"FOR TENANT t1 WHEN get_ops > fast DO SET x", `pol:1:30: expected a number after get_ops >, found "fast"
FOR TENANT t1 WHEN get_ops > fast DO SET x
                             ^~~~`},
		{"FOR TENANT t1 WHEN (get_ops > 5 DO SET x", `pol:1:33: expected ')', found keyword DO
FOR TENANT t1 WHEN (get_ops > 5 DO SET x
                                ^~`},
		{"FOR TENANT t1 WHEN get_ops > 5) DO SET x", `pol:1:31: unexpected ')' with no '(' to close
FOR TENANT t1 WHEN get_ops > 5) DO SET x
                              ^`},
		{"FOR TENANT t1 WHEN OBJECT_TYPE=DOCS, OBJECT_SIZE>1MB DO SET x", `pol:1:36: conditions are joined with AND or OR, not ','
FOR TENANT t1 WHEN OBJECT_TYPE=DOCS, OBJECT_SIZE>1MB DO SET x
                                   ^`},
		{"FOR TENANT t1 WHEN OBJECT_TYPE > DOCS DO SET x", `pol:1:32: OBJECT_TYPE takes = or !=, not >
FOR TENANT t1 WHEN OBJECT_TYPE > DOCS DO SET x
                               ^`},
		{"FOR TENANT t1 WHEN OBJECT_SIZE > big DO SET x", `pol:1:34: expected a size after OBJECT_SIZE >, found "big"
FOR TENANT t1 WHEN OBJECT_SIZE > big DO SET x
                                 ^~~`},
		{"FOR TENANT t1 DO compression", `pol:1:18: expected SET or DELETE, found "compression" (did you mean SET compression?)
FOR TENANT t1 DO compression
                 ^~~~~~~~~~~`},
		{"FOR TENANT t1 DO SET x, y", `pol:1:25: expected SET or DELETE after ',', found "y" (did you mean SET y?)
FOR TENANT t1 DO SET x, y
                        ^`},
		{"FOR TENANT t1 DO SET x SET y", `pol:1:24: missing ',' before SET
FOR TENANT t1 DO SET x SET y
                       ^~~`},
		{"FOR TENANT t1 DO SET x ON proxi", `pol:1:27: unknown stage "proxi": the stages are gateway (alias proxy) and storage (alias object) (did you mean proxy?)
FOR TENANT t1 DO SET x ON proxi
                          ^~~~~`},
		{"FOR TENANT t1 DO SET x ON gateway WITH a=1", `pol:1:35: WITH must come before ON in an action (SET filter [WITH ...] [ON stage] [TRANSIENT|PERSISTENT] [CALLABLE])
FOR TENANT t1 DO SET x ON gateway WITH a=1
                                  ^~~~`},
		{"FOR TENANT t1 DO SET x TRANSIENT PERSISTENT", `pol:1:34: TRANSIENT and PERSISTENT cannot both be given
FOR TENANT t1 DO SET x TRANSIENT PERSISTENT
                                 ^~~~~~~~~~`},
		{"FOR TENANT t1 DO SET x CALLABLE CALLABLE", `pol:1:33: CALLABLE given twice in one action
FOR TENANT t1 DO SET x CALLABLE CALLABLE
                                ^~~~~~~~`},
		{"FOR TENANT t1 DO SET x WITH a", `pol:1:30: expected '=' after parameter a, found end of input
FOR TENANT t1 DO SET x WITH a
                             ^`},
		{"FOR TENANT t1 DO SET x WITH a=", `pol:1:31: expected a value for a, found end of input
FOR TENANT t1 DO SET x WITH a=
                              ^`},
		{"FOR TENANT t1 DO SET x WITH =1", `pol:1:29: expected a parameter name, found '='
FOR TENANT t1 DO SET x WITH =1
                            ^`},
		{"FOR TENANT t1 DO SET x WITH 5=1", `pol:1:29: expected a parameter name, found 5
FOR TENANT t1 DO SET x WITH 5=1
                            ^`},
		{"FOR TENANT t1 DO SET x TO get_ops > 5", `pol:1:27: TO takes object conditions (OBJECT_TYPE, OBJECT_SIZE, OBJECT_NAME or OBJECT_TAG), found "get_ops"; metric conditions go in WHEN
FOR TENANT t1 DO SET x TO get_ops > 5
                          ^~~~~~~`},
		{"FOR TENANT t1 DO SET x TO OBJECT_TYPE=DOCS TO OBJECT_SIZE>1", `pol:1:44: only one TO clause is allowed
FOR TENANT t1 DO SET x TO OBJECT_TYPE=DOCS TO OBJECT_SIZE>1
                                           ^~`},
		{"FOR TENANT t1 DO SET x TO OBJECT_SIZE>1 WITH a=1", `pol:1:41: WITH belongs to an action and must come before TO
FOR TENANT t1 DO SET x TO OBJECT_SIZE>1 WITH a=1
                                        ^~~~`},
		{"FOR TENANT t1 DO SET x WHEN get_ops > 5", `pol:1:24: WHEN must come before DO
FOR TENANT t1 DO SET x WHEN get_ops > 5
                       ^~~~`},
		{"FOR TENANT t1 DO SET x\nFOR TENANT t2 DO SET y z", `pol:2:24: expected end of policy, found "z"
FOR TENANT t2 DO SET y z
                       ^`},
		{"FOR TENANT t1 DO SET x \\ y", `pol:1:24: '\' continues a policy on the next line and must end its line
FOR TENANT t1 DO SET x \ y
                       ^`},
		{`FOR TENANT "t1 DO SET x`, `pol:1:12: unterminated string
FOR TENANT "t1 DO SET x
           ^`},
		{"FOR TENANT t1 DO SET x WITH a=b!c", `pol:1:32: unexpected '!' (only != is an operator)
FOR TENANT t1 DO SET x WITH a=b!c
                               ^`},
		{"FOR TENANT t1 DO SET x WITH a=$", `pol:1:31: unexpected character '$'
FOR TENANT t1 DO SET x WITH a=$
                              ^`},
		{"FOR TENANT t1 DO SET x,", `pol:1:24: expected SET or DELETE after ',', found end of input
FOR TENANT t1 DO SET x,
                       ^`},
		{"DO: FOR TENANT t1 DO SET x", `pol:1:1: a policy name cannot be the keyword DO unless quoted
DO: FOR TENANT t1 DO SET x
^~`},
		{`FOR TENANT t1 DO SET ""`, `pol:1:22: expected a filter name, found an empty string
FOR TENANT t1 DO SET ""
                     ^~`},
		// Columns count runes, and the caret line keeps the line's tabs.
		{"\tFOR\tTENANT t1 DO SET é x", "pol:1:25: expected end of policy, found \"x\"\n\tFOR\tTENANT t1 DO SET é x\n\t   \t                   ^"},
		{"FOR TENANT t1 WHEN " + strings.Repeat("(", maxNesting+1) + "a > 1", `pol:1:84: conditions nest too deeply (more than 64 parentheses)
FOR TENANT t1 WHEN ` + strings.Repeat("(", maxNesting+1) + `a > 1
` + strings.Repeat(" ", 83) + `^`},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			ps, err := Parse("pol", tt.src)
			if err == nil {
				t.Fatalf("Parse succeeded: %v", ps)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tt.want)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error is %T, want *Error", err)
			}
		})
	}
}

func TestErrorFields(t *testing.T) {
	_, err := Parse("", "FOR TENANT t1 DO SET x\n  FOR TENANT t2 DOO SET y")
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not *Error", err)
	}
	want := Error{Name: "", Pos: 39, Line: 2, Col: 17, Msg: "expected WHEN or DO after the targets, found \"DOO\"",
		Snippet: "  FOR TENANT t2 DOO SET y\n                ^~~", Suggestion: "DO"}
	if *pe != want {
		t.Errorf("error = %+v\nwant    %+v", *pe, want)
	}
	if got := pe.Error(); got != "2:17: expected WHEN or DO after the targets, found \"DOO\" (did you mean DO?)\n  FOR TENANT t2 DOO SET y\n                ^~~" {
		t.Errorf("Error() = %q", got)
	}
}

func TestLexer(t *testing.T) {
	type tok struct {
		typ itemType
		val string
	}
	tests := []struct {
		src  string
		want []tok
	}{
		{"10MBps 10MB/s 512KB 1.5GiB 5% 300ms 3000 2024-logs t1/c1 *.log",
			[]tok{{itemNumber, "10MBps"}, {itemNumber, "10MB/s"}, {itemNumber, "512KB"}, {itemNumber, "1.5GiB"}, {itemNumber, "5%"},
				{itemNumber, "300ms"}, {itemNumber, "3000"}, {itemWord, "2024-logs"}, {itemWord, "t1/c1"}, {itemWord, "*.log"}}},
		{"a<=b>=c<d>e=f==g!=h", []tok{{itemWord, "a"}, {itemOp, "<="}, {itemWord, "b"}, {itemOp, ">="}, {itemWord, "c"}, {itemOp, "<"},
			{itemWord, "d"}, {itemOp, ">"}, {itemWord, "e"}, {itemOp, "="}, {itemWord, "f"}, {itemOp, "="}, {itemWord, "g"}, {itemOp, "!="}, {itemWord, "h"}}},
		{"TENANT:t1, (x) \"a \\\"b\\\\\"", []tok{{itemWord, "TENANT"}, {itemColon, ":"}, {itemWord, "t1"}, {itemComma, ","},
			{itemLParen, "("}, {itemWord, "x"}, {itemRParen, ")"}, {itemString, `a "b\`}}},
		{"a # c\nb,\n\n c \\\n d\n", []tok{{itemWord, "a"}, {itemNewline, "\n"}, {itemWord, "b"}, {itemComma, ","}, {itemWord, "c"},
			{itemWord, "d"}, {itemNewline, "\n"}}},
		{"1.x 1. .5", []tok{{itemWord, "1.x"}, {itemWord, "1."}, {itemWord, ".5"}}},
	}
	for _, tt := range tests {
		l := lex(tt.src)
		var got []tok
		for {
			it := l.nextItem()
			if it.typ == itemEOF {
				break
			}
			if it.typ == itemError {
				t.Fatalf("%q: error %s", tt.src, it.val)
			}
			if it.end <= it.pos || int(it.end) > len(tt.src) {
				t.Errorf("%q: item %q has span [%d,%d)", tt.src, it.val, it.pos, it.end)
			}
			got = append(got, tok{it.typ, it.val})
		}
		if len(got) != len(tt.want) {
			t.Errorf("%q: got %v, want %v", tt.src, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%q: item %d = %v, want %v", tt.src, i, got[i], tt.want[i])
			}
		}
	}
}
