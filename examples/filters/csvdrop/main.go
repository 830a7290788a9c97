// Command csvdrop is a Facet WebAssembly filter that removes columns from
// CSV text: FACET_PARAM_COLUMNS lists them, comma-separated, by header
// name or by 1-based position. The first record is the header unless
// FACET_PARAM_HEADER is false (then only positions are accepted). It
// streams record by record with encoding/csv, so quoted fields holding
// commas or newlines are handled; output is written with the same
// separator and RFC 4180 quoting.
package main

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

func main() {
	spec := os.Getenv("FACET_PARAM_COLUMNS")
	header := os.Getenv("FACET_PARAM_HEADER") != "false"
	r := csv.NewReader(bufio.NewReaderSize(os.Stdin, 1<<20))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	r.LazyQuotes = true
	bw := bufio.NewWriterSize(os.Stdout, 1<<20)
	w := csv.NewWriter(bw)
	var drop map[int]bool
	first := true
	var out []string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			fail(err)
		}
		if first {
			first = false
			if drop, err = columns(spec, rec, header); err != nil {
				fmt.Fprintln(os.Stderr, "csvdrop:", err)
				os.Exit(2)
			}
		}
		out = out[:0]
		for i, f := range rec {
			if !drop[i] {
				out = append(out, f)
			}
		}
		if err := w.Write(out); err != nil {
			fail(err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		fail(err)
	}
	if err := bw.Flush(); err != nil {
		fail(err)
	}
}

// columns resolves the spec against the first record.
func columns(spec string, first []string, header bool) (map[int]bool, error) {
	drop := map[int]bool{}
	for _, c := range strings.Split(spec, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if n, err := strconv.Atoi(c); err == nil {
			if n < 1 {
				return nil, fmt.Errorf("column position %d: positions start at 1", n)
			}
			drop[n-1] = true
			continue
		}
		if !header {
			return nil, fmt.Errorf("column %q: without a header, give positions", c)
		}
		found := false
		for i, h := range first {
			if strings.TrimSpace(h) == c {
				drop[i], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("no column named %q in the header", c)
		}
	}
	return drop, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "csvdrop:", err)
	os.Exit(1)
}
