package s3select

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// decodeAll reads every message with the AWS SDK's own decoder, which
// checks the prelude and message CRCs.
func decodeAll(t *testing.T, b []byte) []eventstream.Message {
	t.Helper()
	dec := eventstream.NewDecoder()
	r := bytes.NewReader(b)
	var msgs []eventstream.Message
	for r.Len() > 0 {
		m, err := dec.Decode(r, nil)
		if err != nil {
			t.Fatalf("message %d: %v", len(msgs), err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func hdrOf(m eventstream.Message, name string) string {
	if v := m.Headers.Get(name); v != nil {
		return v.String()
	}
	return ""
}

func TestEventStreamFramingDecodesWithTheSDK(t *testing.T) {
	var buf bytes.Buffer
	ew := NewEventWriter(&buf)
	big := bytes.Repeat([]byte("x"), maxRecordEvent+10)
	if err := errors.Join(ew.Records([]byte("a,b\n")), ew.Records(big), ew.Cont(), ew.Progress(Stats{1, 2, 3}),
		ew.Stats(Stats{10, 20, 30}), ew.End(), ew.Error("CSVParsingError", "bad record")); err != nil {
		t.Fatal(err)
	}
	msgs := decodeAll(t, buf.Bytes())
	var types []string
	for _, m := range msgs {
		types = append(types, hdrOf(m, ":event-type")+hdrOf(m, ":error-code"))
	}
	if got := strings.Join(types, " "); got != "Records Records Records Cont Progress Stats End CSVParsingError" {
		t.Fatalf("events %s", got)
	}
	if string(msgs[0].Payload) != "a,b\n" || len(msgs[1].Payload)+len(msgs[2].Payload) != len(big) {
		t.Fatal("records payloads differ")
	}
	if !strings.Contains(string(msgs[5].Payload), "<BytesScanned>10</BytesScanned><BytesProcessed>20</BytesProcessed><BytesReturned>30</BytesReturned>") {
		t.Fatalf("stats %s", msgs[5].Payload)
	}
	if hdrOf(msgs[7], ":message-type") != "error" || hdrOf(msgs[7], ":error-message") != "bad record" {
		t.Fatal("error event headers")
	}
	// A flipped payload byte fails the message CRC.
	b := buf.Bytes()
	b[20] ^= 1
	if _, err := eventstream.NewDecoder().Decode(bytes.NewReader(b), nil); err == nil {
		t.Fatal("corrupt message decoded")
	}
}

// slowClock advances a second per call, so every tick is due.
type slowClock struct{ t time.Time }

func (c *slowClock) now() time.Time { c.t = c.t.Add(time.Second); return c.t }

func TestProgressAndKeepAlive(t *testing.T) {
	data := []byte("a\n" + strings.Repeat("1\n", 5000))
	for _, progress := range []bool{true, false} {
		req := csvReq("SELECT * FROM S3Object WHERE a = '2'", "USE")
		req.RequestProgress.Enabled = progress
		clk := &slowClock{}
		p, err := Native{Now: clk.now}.Prepare(req)
		if err != nil {
			t.Fatal(err)
		}
		var out bufSink
		if _, err := p.Run(context.Background(), memInput(data), &out); err != nil {
			t.Fatal(err)
		}
		if progress && (out.progress == 0 || out.conts != 0) || !progress && (out.conts == 0 || out.progress != 0) {
			t.Fatalf("progress=%v: %d progress, %d cont events", progress, out.progress, out.conts)
		}
	}
}

func TestCancelledRunStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, _ := Native{}.Prepare(csvReq("SELECT * FROM S3Object", "NONE"))
	_, err := p.Run(ctx, memInput(strings.Repeat("x\n", 5000)), &bufSink{})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

func TestEmptyObjectAggregates(t *testing.T) {
	for _, hdr := range []string{"USE", "NONE"} {
		got, err := runSelect(t, csvReq("SELECT COUNT(*), SUM(s._1) FROM S3Object s", hdr), nil)
		if err != nil || got != "0,\n" {
			t.Fatalf("%s: got %q, %v", hdr, got, err)
		}
	}
	got, err := runSelect(t, csvReq("SELECT * FROM S3Object", "USE"), nil)
	if err != nil || got != "" {
		t.Fatalf("got %q, %v", got, err)
	}
}
