package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/metrics"
)

// `facet bus --aggregate` runs a NATS server that clients reach at the
// printed URL, and merges the node samples published on it.
func TestBusCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	r, w := io.Pipe()
	cmd := NewRoot()
	cmd.SetArgs([]string{"bus", "--addr", "127.0.0.1:0", "--aggregate", "--log-level", "error"})
	cmd.SetOut(w)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, r)
	url := strings.TrimSpace(strings.TrimPrefix(line, "facet bus listening on "))
	if !strings.HasPrefix(url, "nats://127.0.0.1:") {
		t.Fatalf("printed %q", line)
	}
	c, err := bus.Dial(url, "test", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	aggs := make(chan metrics.Aggregate, 4)
	if _, err := c.Subscribe(metrics.SubjectAggPrefix+"put_ops", func(_ string, data []byte) {
		var a metrics.Aggregate
		if json.Unmarshal(data, &a) == nil {
			aggs <- a
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	// A sample for a period long past: the aggregator merges it once its
	// grace has run out.
	s, _ := json.Marshal(metrics.NodeSample{V: 1, Node: "n1", Metric: "put_ops", StartMs: 1000, PeriodMs: 1000,
		Values: map[string]float64{"tenant:t1": 4}})
	if err := c.Publish(metrics.SubjectNodePrefix+"put_ops", s); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-aggs:
		if a.Values["tenant:t1"] != 4 || a.Nodes != 1 {
			t.Fatalf("aggregate %+v", a)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no aggregate")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	w.Close()
}
