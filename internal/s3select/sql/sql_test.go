package sql

import (
	"errors"
	"strings"
	"testing"
)

// mapRow is a Row over a JSON-like object.
type mapRow struct{ o *Obj }

func (m mapRow) Field(int) Value { return Value{} }
func (m mapRow) Named(n string, exact bool) Value {
	v, _ := m.o.Get(n, exact)
	return v
}
func (m mapRow) Doc() Value { return NewObject(m.o) }

func row(kv ...any) mapRow {
	o := &Obj{}
	for i := 0; i < len(kv); i += 2 {
		o.Keys = append(o.Keys, kv[i].(string))
		switch v := kv[i+1].(type) {
		case int:
			o.Vals = append(o.Vals, NewInt(int64(v)))
		case float64:
			o.Vals = append(o.Vals, NewFloat(v))
		case string:
			o.Vals = append(o.Vals, NewString(v))
		case nil:
			o.Vals = append(o.Vals, Value{K: Null})
		}
	}
	return mapRow{o}
}

func eval(t *testing.T, expr string, r Row) string {
	t.Helper()
	p, err := Compile("SELECT "+expr+" FROM S3Object s", Schema{})
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	vals, err := p.Project(r, nil)
	if err != nil {
		return "error:" + err.(*Error).Code
	}
	return string(vals[0].AppendJSON(nil))
}

func TestExpressions(t *testing.T) {
	r := row("a", 7, "b", 2.5, "s", "Hello", "n", nil, "d", "2021-02-03T04:05:06Z")
	cases := map[string]string{
		"s.a + 1":                         "8",
		"s.a / 2":                         "3",
		"s.a % 4":                         "3",
		"s.a * s.b":                       "17.5",
		"s.a / 0":                         "null",
		"-s.a":                            "-7",
		"s.a > 5 AND s.b < 3":             "true",
		"s.a > 5 AND s.n > 1":             "null",
		"s.a < 5 AND s.n > 1":             "false",
		"s.a < 5 OR s.n > 1":              "null",
		"NOT (s.a = 7)":                   "false",
		"s.s LIKE 'H_l%o'":                "true",
		"s.s NOT LIKE '%x%'":              "true",
		"'a%b' LIKE 'a!%b' ESCAPE '!'":    "true",
		"'axb' LIKE 'a!%b' ESCAPE '!'":    "false",
		"s.a BETWEEN 7 AND 8":             "true",
		"s.a IN (1, '7')":                 "true",
		"s.n IS NULL":                     "true",
		"s.zz IS MISSING":                 "true",
		"s.zz IS NULL":                    "true",
		"s.n IS NOT MISSING":              "true",
		"CAST(s.b AS INT)":                "2",
		"CAST('12' AS FLOAT) + 1":         "13",
		"CAST(s.a AS STRING) || 'x'":      `"7x"`,
		"CAST('nope' AS INT)":             "error:CastFailed",
		"LOWER(s.s) || UPPER(s.s)":        `"helloHELLO"`,
		"SUBSTRING(s.s FROM 2 FOR 3)":     `"ell"`,
		"SUBSTRING(s.s, 0, 2)":            `"H"`,
		"SUBSTRING(s.s, 4)":               `"lo"`,
		"TRIM('  x ')":                    `"x"`,
		"TRIM(LEADING 'xy' FROM 'xyxzy')": `"zy"`,
		"TRIM(TRAILING FROM ' a  ')":      `" a"`,
		"CHAR_LENGTH('héllo')":            "5",
		"CHARACTER_LENGTH(s.s)":           "5",
		"COALESCE(s.n, s.zz, 3)":          "3",
		"NULLIF(s.a, 7)":                  "null",
		"EXTRACT(MONTH FROM s.d)":         "2",
		"EXTRACT(TIMEZONE_HOUR FROM TO_TIMESTAMP('2021-01-01T00:00:00+05:30'))":      "5",
		"TO_STRING(TO_TIMESTAMP(s.d), 'yyyy-MM-dd HH:mm:ss a')":                      `"2021-02-03 04:05:06 AM"`,
		"TO_STRING(DATE_ADD(DAY, 30, s.d), 'MMM d')":                                 `"Mar 5"`,
		"DATE_DIFF(MONTH, TO_TIMESTAMP('2021-01-31T'), TO_TIMESTAMP('2021-02-28T'))": "0",
		"DATE_DIFF(YEAR, `2010-01-01T`, `2011-01-01T`)":                              "1",
		"DATE_DIFF(DAY, `2010-01-01T23:00Z`, `2010-01-02T01:00Z`)":                   "0",
		"TO_TIMESTAMP('2007T')":                                                      `"2007-01-01T00:00:00Z"`,
		"s.a = '7'":                                                                  "true",
		"s.s < 'Z'":                                                                  "true",
		"1e3 + .5":                                                                   "1000.5",
		"CASE WHEN s.a > 5 THEN 'big' ELSE 'small' END":                              `"big"`,
		"CASE WHEN s.a > 9 THEN 'big' WHEN s.b < 3 THEN 'mid' END":                   `"mid"`,
		"CASE WHEN s.a > 9 THEN 'big' END":                                           "null",
		"CASE WHEN s.n > 1 THEN 1 ELSE 2 END":                                        "2",
		"CASE s.s WHEN 'x' THEN 1 WHEN 'Hello' THEN 2 ELSE 3 END":                    "2",
		"CASE s.a WHEN '7' THEN s.a * 2 END + 1":                                     "15",
	}
	for expr, want := range cases {
		if got := eval(t, expr, r); got != want {
			t.Errorf("%s = %s, want %s", expr, got, want)
		}
	}
}

func TestAggregates(t *testing.T) {
	p, err := Compile("SELECT COUNT(*), COUNT(s.x), SUM(s.x), AVG(s.x), MIN(s.x), MAX(s.x), 1 FROM S3Object s WHERE s.x > 0", Schema{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Row{row("x", 1), row("x", 2.5), row("y", 1), row("x", -1), row("x", "4")} {
		if ok, _ := p.Match(r); ok {
			if err := p.Accumulate(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	vals, _ := p.Result(nil)
	var got []string
	for _, v := range vals {
		got = append(got, string(v.AppendJSON(nil)))
	}
	if s := strings.Join(got, ","); s != "3,3,7.5,2.5,1,4,1" {
		t.Fatalf("got %s", s)
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		"SELECT":                            "ParseExpectedExpression",
		"SELECT * FROM":                     "ParseUnexpectedToken",
		"SELECT * FROM S3Object WHERE a = ": "ParseExpectedExpression",
		"SELECT a FROM S3Object s WHERE\n  s.b ? 1": "LexerInvalidChar",
		"SELECT 1x FROM S3Object":                   "LexerInvalidLiteral",
		"SELECT * FROM S3Object LIMIT -1":           "ParseExpectedNumber",
		"SELECT SUM(*) FROM S3Object":               "ParseUnexpectedOperator",
		"SELECT s.a, COUNT(*) FROM S3Object s":      "UnsupportedSqlStructure",
		"SELECT * FROM S3Object WHERE COUNT(*) > 1": "UnsupportedSqlStructure",
		"SELECT EXTRACT(WEEK FROM x) FROM S3Object": "ParseExpectedKeyword",
		"SELECT CAST(a AS BLOB) FROM S3Object":      "InvalidDataType",
		"SELECT a FROM S3Object WHERE a IS 3":       "ParseExpectedKeyword",
		"SELECT s.a[x] FROM S3Object s":             "ParseInvalidPathComponent",
		"SELECT * FROM S3Object extra tokens":       "ParseUnexpectedToken",
		"SELECT CASE a THEN 1 END FROM S3Object":    "ParseExpectedKeyword",
		"SELECT CASE WHEN a THEN 1 FROM S3Object":   "ParseExpectedKeyword",
	}
	for q, code := range cases {
		_, err := Compile(q, Schema{})
		var e *Error
		if !errors.As(err, &e) || e.Code != code {
			t.Errorf("%q: got %v, want %s", q, err, code)
			continue
		}
		if e.Line == 0 && strings.HasPrefix(code, "Parse") {
			t.Errorf("%q: no position in %v", q, e)
		}
	}
	_, err := Compile("SELECT a FROM S3Object s WHERE\n  s.b ? 1", Schema{})
	if e := err.(*Error); e.Line != 2 || e.Col != 7 {
		t.Fatalf("position %d:%d, want 2:7", e.Line, e.Col)
	}
}

func TestPositionalAndHeader(t *testing.T) {
	schema := Schema{Positional: true, Index: func(n string, exact bool) (int, bool) {
		if n == "b" || !exact && strings.EqualFold(n, "b") {
			return 1, true
		}
		return 0, false
	}}
	p, err := Compile(`SELECT s._3, B, "b" FROM S3Object s`, schema)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Fields) != 2 || p.Fields[0] != 1 || p.Fields[1] != 2 || p.AllFields {
		t.Fatalf("fields %v all=%v", p.Fields, p.AllFields)
	}
	if _, err := Compile(`SELECT "B" FROM S3Object`, schema); err == nil {
		t.Fatal("a quoted name must match case")
	}
}

// FuzzParse: any input either parses and compiles or fails with a coded
// error, never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM S3Object",
		"SELECT s._1, UPPER(s.name) AS n FROM S3Object s WHERE s.a LIKE 'x%' ESCAPE '!' LIMIT 3",
		"SELECT COUNT(*), AVG(CAST(s.x AS FLOAT)) FROM S3Object[*].a[*] s WHERE s.y BETWEEN 1 AND 2",
		"SELECT TRIM(LEADING 'a' FROM s.b), SUBSTRING(s.c FROM 1 FOR 2) FROM S3Object s",
		"SELECT EXTRACT(YEAR FROM `2020T`), DATE_ADD(DAY, 1, UTCNOW()) FROM S3Object",
		"SELECT s.a.b[0].\"c\" FROM S3Object s WHERE s.d IS NOT MISSING AND s.e NOT IN (1,'2')",
		"SELECT CASE s.a WHEN 1 THEN 'x' ELSE CASE WHEN s.b > 2 THEN 'y' END END, SUM(CASE WHEN s.c THEN 1 ELSE 0 END) FROM S3Object s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		p, err := Compile(q, Schema{})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" {
				t.Fatalf("%q: uncoded error %v", q, err)
			}
			return
		}
		r := row("a", 1, "s", "x")
		if _, err := p.Match(r); err == nil {
			_, _ = p.Project(r, nil)
		}
	})
}
