package metrics

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/bus"
)

func waitValue(t *testing.T, c <-chan Value, what string) Value {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no value: %s", what)
		panic("unreachable")
	}
}

// Two gateways' collectors and an aggregator, each on its own connection
// to a real NATS server: the subscriber for t1 gets the sum of both
// nodes, and only t1's.
func TestNATSTwoNodesSum(t *testing.T) {
	srv, err := bus.StartServer(bus.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn := func(name string) *bus.NATS {
		b, err := srv.Connect(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	aggBus := conn("agg")
	agg := NewAggregator(AggregatorConfig{Bus: aggBus})
	ctx, cancel := contextWithCancel(t)
	defer cancel()
	if err := agg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan Value, 16)
	other := make(chan Value, 16)
	if _, err := agg.Subscribe("put_ops", "tenant:t1", func(v Value) { got <- v }); err != nil {
		t.Fatal(err)
	}
	if _, err := agg.Subscribe("put_ops", "tenant:t2", func(v Value) { other <- v }); err != nil {
		t.Fatal(err)
	}
	nodeA := NewCollector(CollectorConfig{Node: "A", Bus: conn("A")})
	nodeB := NewCollector(CollectorConfig{Node: "B", Bus: conn("B")})
	// The aggregator's subscriptions are at the server once a flush
	// round-trips.
	if err := aggBus.Flush(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	// Periods in the future: the aggregator's clock never finds them due,
	// so only completeness merges them. The first one is never complete
	// early (the aggregator does not know the nodes yet); it is merged
	// with the second.
	base := time.Now().Truncate(time.Second).Add(time.Hour)
	nodeA.Flush(base.Add(time.Second))
	nodeB.Flush(base.Add(time.Second))
	// The two connections do not order each other's messages: let the
	// aggregator meet both nodes before the period that must wait for
	// both.
	for agg.Stats().Nodes < 2 {
		time.Sleep(10 * time.Millisecond)
	}

	for range 3 {
		serve(t, nodeA, req("PutObject", "t1", "b1", "k"), nil)
	}
	for range 2 {
		serve(t, nodeB, req("PutObject", "t1", "b2", "k"), nil)
	}
	serve(t, nodeB, req("PutObject", "t2", "b2", "k"), nil)
	nodeA.Flush(base.Add(2 * time.Second))
	nodeB.Flush(base.Add(2 * time.Second))
	if v := waitValue(t, got, "first period"); v.Value != 0 || !v.Period.Equal(base) {
		t.Fatalf("first period: %+v", v)
	}
	v := waitValue(t, got, "summed period")
	if v.Value != 5 || v.Nodes != 2 || v.Target != "tenant:t1" || !v.Period.Equal(base.Add(time.Second)) {
		t.Fatalf("t1 got %+v", v)
	}
	for len(other) > 0 {
		if v := <-other; v.Target != "tenant:t2" {
			t.Fatalf("t2's subscriber got %+v", v)
		}
	}
}

// The bus goes down and comes back: the data path never notices (hooks
// and flushes go on, publishing is buffered or counted), and samples reach
// the aggregator again afterwards.
func TestNATSBusOutage(t *testing.T) {
	srv, err := bus.StartServer(bus.ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(url, "nats://"))
	nodeBus, err := bus.Dial(url, "node", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nodeBus.Close()
	aggBus, err := bus.Dial(url, "agg", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer aggBus.Close()
	agg := NewAggregator(AggregatorConfig{Bus: aggBus})
	ctx, cancel := contextWithCancel(t)
	defer cancel()
	if err := agg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan Value, 64)
	if _, err := agg.Subscribe("put_ops", "tenant:t1", func(v Value) { got <- v }); err != nil {
		t.Fatal(err)
	}
	node := NewCollector(CollectorConfig{Node: "A", Bus: nodeBus, Registry: NewRegistry(PutOps())})
	if err := aggBus.Flush(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Truncate(time.Second).Add(-time.Hour)
	node.Flush(base.Add(time.Second))
	waitValue(t, got, "before the outage")

	srv.Close()
	for nodeBus.Connected() {
		time.Sleep(10 * time.Millisecond)
	}
	serve(t, node, req("PutObject", "t1", "b", "k"), nil)
	node.Flush(base.Add(2 * time.Second)) // buffered by the connection
	if node.Stats().PublishErrors != 0 {
		t.Fatalf("publishing while down: %+v", node.Stats())
	}

	srv2, err := bus.StartServer(bus.ServerOptions{Addr: "127.0.0.1:" + port})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	// Whether the buffered sample arrives depends on which connection
	// comes back first; later periods must.
	for sec := 3; ; sec++ {
		serve(t, node, req("PutObject", "t1", "b", "k"), nil)
		node.Flush(base.Add(time.Duration(sec) * time.Second))
		select {
		case v := <-got:
			if v.Value >= 1 {
				return
			}
		case <-time.After(100 * time.Millisecond):
		}
		if sec > 300 {
			t.Fatal("no metric values after the bus came back")
		}
	}
}

// A controller subscribing to an object: the aggregator asks the nodes to
// count it (a watch on the bus), and the object's values flow back.
func TestNATSObjectSubscription(t *testing.T) {
	srv, err := bus.StartServer(bus.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	aggBus, _ := srv.Connect("agg")
	defer aggBus.Close()
	nodeBus, _ := srv.Connect("node")
	defer nodeBus.Close()
	ctx, cancel := contextWithCancel(t)
	defer cancel()
	agg := NewAggregator(AggregatorConfig{Bus: aggBus})
	node := NewCollector(CollectorConfig{Node: "A", Bus: nodeBus, Registry: NewRegistry(GetOps())})
	if err := node.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	if err := agg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan Value, 16)
	if _, err := agg.Subscribe("get_ops", "object:t1/b/hot.bin", func(v Value) { got <- v }); err != nil {
		t.Fatal(err)
	}
	for node.nWatch.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	base := time.Now().Truncate(time.Second).Add(time.Hour)
	node.Flush(base.Add(time.Second))
	for range 4 {
		serve(t, node, req("GetObject", "t1", "b", "hot.bin"), nil)
	}
	serve(t, node, req("GetObject", "t1", "b", "cold.bin"), nil)
	node.Flush(base.Add(2 * time.Second))
	waitValue(t, got, "first period")
	if v := waitValue(t, got, "second period"); v.Value != 4 || v.Target != "object:t1/b/hot.bin" {
		t.Fatalf("object value %+v", v)
	}
}
