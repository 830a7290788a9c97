package s3select

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchCSV makes a 10-column log-like CSV of about size bytes.
func benchCSV(size int) []byte { return benchCSVQuoted(size, false) }

// benchCSVQuoted makes benchCSV's table; quoted, its string columns are
// in quotes, as pyarrow's "needed" quoting (bench/select_pushdown.py's
// object) writes them.
func benchCSVQuoted(size int, quoted bool) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	q := ""
	if quoted {
		q = `"`
		b.WriteString(`"id","user_id","ts","status","method","path","bytes","latency_ms","region","sel"` + "\n")
	} else {
		b.WriteString("id,user_id,ts,status,method,path,bytes,latency_ms,region,sel\n")
	}
	methods := []string{"GET", "PUT", "DELETE", "HEAD"}
	regions := []string{"eu-west", "us-east", "ap-south"}
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%d,%su%05d%s,2024-01-%02dT%02d:%02d:%02dZ,%d,%s%s%s,%s/data/obj-%d.csv%s,%d,%d,%s%s%s,%d\n",
			i, q, r.IntN(50000), q, 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), []int{200, 200, 200, 404, 500}[r.IntN(5)],
			q, methods[r.IntN(4)], q, q, r.IntN(1e6), q, r.IntN(1<<20), r.IntN(900), q, regions[r.IntN(3)], q, r.IntN(100))
	}
	return []byte(b.String())
}

type discardSink struct{ n int64 }

func (d *discardSink) Records(p []byte) error { d.n += int64(len(p)); return nil }
func (d *discardSink) Progress(Stats) error   { return nil }
func (d *discardSink) Cont() error            { return nil }

var (
	benchData       = sync.OnceValue(func() []byte { return benchCSV(64 << 20) })
	benchQuotedData = sync.OnceValue(func() []byte { return benchCSVQuoted(64<<20, true) })
)

func BenchmarkCSVScan(b *testing.B) {
	data := benchData()
	for _, q := range []string{
		"SELECT s.user_id, s.bytes FROM S3Object s WHERE s.sel < 2",
		"SELECT s.user_id, s.bytes FROM S3Object s WHERE CAST(s.sel AS INT) < 2",
		"SELECT * FROM S3Object s WHERE s.status = '500'",
		"SELECT * FROM S3Object",
		"SELECT COUNT(*) FROM S3Object",
	} {
		b.Run(q, func(b *testing.B) { benchRun(b, Native{}, csvReq(q, "USE"), data) })
	}
	// The bench's object quotes its string columns.
	q := "SELECT s.user_id, s.bytes FROM S3Object s WHERE s.sel < 2"
	b.Run("quoted/"+q, func(b *testing.B) { benchRun(b, Native{Workers: 1}, csvReq(q, "USE"), benchQuotedData()) })
}

func BenchmarkParallelScan(b *testing.B) {
	data := benchData()
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			benchRun(b, Native{Workers: w}, csvReq("SELECT s.user_id, s.bytes FROM S3Object s WHERE s.sel < 2", "USE"), data)
		})
	}
}

// cpuTime is the process's user+system CPU time: on a shared machine
// the scan speed per core is bytes per CPU second, not per wall second.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, cpu0 time.Duration, size int64) {
	if d := cpuTime() - cpu0; d > 0 {
		b.ReportMetric(float64(size)*float64(b.N)/d.Seconds()/1e6, "MB/cpu-s")
	}
}

// benchRun runs req over data b.N times, reporting wall and CPU rates.
func benchRun(b *testing.B, n Native, req *Request, data []byte) {
	p, err := n.Prepare(req)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := p.Run(context.Background(), memInput(data), &discardSink{}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0, int64(len(data)))
}
