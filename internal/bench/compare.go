package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// CompareOptions shape `facet bench compare`.
type CompareOptions struct {
	// Labels name the reports (default: their scenario names, or A, B...).
	Labels []string
	// Subject is the report (1-based) whose figures are divided by each
	// other report's; 0 (default) is the last, so "compare old new" shows
	// new/old.
	Subject int
	// Markdown prints a Markdown table; NoHeader leaves its header out, so
	// that several comparisons can be appended into one table.
	Markdown, NoHeader bool
}

// compareRow is one tenant and operation across the reports.
type compareRow struct {
	tenant, op string
	stats      []*Stats // nil where a report lacks the row
}

// Compare prints the reports side by side, per tenant and operation:
// ops/s, MB/s, p50 and p99 of each, and the subject's throughput ratios
// over each other report. Rows are matched by tenant name and operation;
// when the reports have the same number of tenants under different names
// (the same scenario against different servers), by position.
func Compare(w io.Writer, reports []*Report, o CompareOptions) error {
	if len(reports) < 2 {
		return fmt.Errorf("compare needs at least two reports")
	}
	labels := o.Labels
	if len(labels) == 0 {
		for i, r := range reports {
			l := r.Name
			if l == "" || strings.Contains(strings.Join(labels, "\x00"), l) {
				l = string(rune('A' + i))
			}
			labels = append(labels, l)
		}
	}
	if len(labels) != len(reports) {
		return fmt.Errorf("%d labels for %d reports", len(labels), len(reports))
	}
	subj := o.Subject - 1
	if o.Subject == 0 {
		subj = len(reports) - 1
	}
	if subj < 0 || subj >= len(reports) {
		return fmt.Errorf("subject %d: want 1..%d", o.Subject, len(reports))
	}
	rows := matchRows(reports)

	ratio := func(a, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", a/b)
	}
	var header []string
	header = append(header, "tenant", "op")
	for _, l := range labels {
		header = append(header, l+" ops/s", l+" MB/s", l+" p50 ms", l+" p99 ms")
	}
	for i, l := range labels {
		if i != subj {
			header = append(header, labels[subj]+"/"+l+" ops/s", labels[subj]+"/"+l+" MB/s")
		}
	}
	var lines [][]string
	for _, r := range rows {
		line := []string{r.tenant, r.op}
		for _, s := range r.stats {
			if s == nil {
				line = append(line, "-", "-", "-", "-")
				continue
			}
			line = append(line, fmt.Sprintf("%.1f", s.OpsPerSec), fmt.Sprintf("%.2f", s.MBPerSec), fmt.Sprintf("%.2f", s.P50Ms), fmt.Sprintf("%.2f", s.P99Ms))
		}
		for i, s := range r.stats {
			if i == subj {
				continue
			}
			if s == nil || r.stats[subj] == nil {
				line = append(line, "-", "-")
				continue
			}
			line = append(line, ratio(r.stats[subj].OpsPerSec, s.OpsPerSec), ratio(r.stats[subj].MBPerSec, s.MBPerSec))
		}
		lines = append(lines, line)
	}
	if o.Markdown {
		if !o.NoHeader {
			fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
			fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(header)))
		}
		for _, l := range lines {
			fmt.Fprintf(w, "| %s |\n", strings.Join(l, " | "))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, l := range lines {
		fmt.Fprintln(tw, strings.Join(l, "\t")+"\t")
	}
	return tw.Flush()
}

func matchRows(reports []*Report) []compareRow {
	byPosition := true
	for _, r := range reports[1:] {
		if len(r.Tenants) != len(reports[0].Tenants) {
			byPosition = false
		}
	}
	if byPosition {
		// Only when names differ: same names always match by name.
		same := true
		for _, r := range reports[1:] {
			for i, t := range r.Tenants {
				same = same && t.Name == reports[0].Tenants[i].Name
			}
		}
		byPosition = !same
	}
	var rows []compareRow
	index := map[[2]string]int{}
	for ri, rep := range reports {
		for ti, t := range rep.Tenants {
			name := t.Name
			if byPosition {
				name = reports[0].Tenants[ti].Name
			}
			for _, op := range t.Ops {
				k := [2]string{name, op.Op}
				i, ok := index[k]
				if !ok {
					i = len(rows)
					index[k] = i
					rows = append(rows, compareRow{tenant: name, op: op.Op, stats: make([]*Stats, len(reports))})
				}
				s := op.Total
				rows[i].stats[ri] = &s
			}
		}
	}
	return rows
}
