package s3select

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// EventWriter frames the response as AWS event-stream messages: a
// prelude (total length, headers length, CRC32 of both), string headers,
// the payload, and a CRC32 of the whole message.
type EventWriter struct {
	w    io.Writer
	buf  []byte
	tail [4]byte
	err  error
}

// NewEventWriter returns an EventWriter on w.
func NewEventWriter(w io.Writer) *EventWriter { return &EventWriter{w: w} }

type header struct{ name, value string }

// message writes one message.
func (e *EventWriter) message(headers []header, payload []byte) error {
	if e.err != nil {
		return e.err
	}
	hlen := 0
	for _, h := range headers {
		hlen += 1 + len(h.name) + 1 + 2 + len(h.value)
	}
	total := 12 + hlen + len(payload) + 4
	b := e.buf[:0]
	b = binary.BigEndian.AppendUint32(b, uint32(total))
	b = binary.BigEndian.AppendUint32(b, uint32(hlen))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[:8]))
	for _, h := range headers {
		b = append(b, byte(len(h.name)))
		b = append(b, h.name...)
		b = append(b, 7) // string
		b = binary.BigEndian.AppendUint16(b, uint16(len(h.value)))
		b = append(b, h.value...)
	}
	// The payload is written as it is, not copied behind the headers.
	crc := crc32.Update(crc32.ChecksumIEEE(b), crc32.IEEETable, payload)
	e.buf = b
	if _, e.err = e.w.Write(b); e.err != nil {
		return e.err
	}
	if len(payload) > 0 {
		if _, e.err = e.w.Write(payload); e.err != nil {
			return e.err
		}
	}
	_, e.err = e.w.Write(binary.BigEndian.AppendUint32(e.tail[:0], crc))
	return e.err
}

var (
	hdrEvent       = header{":message-type", "event"}
	hdrRecords     = []header{{":event-type", "Records"}, {":content-type", "application/octet-stream"}, hdrEvent}
	hdrCont        = []header{{":event-type", "Cont"}, hdrEvent}
	hdrEnd         = []header{{":event-type", "End"}, hdrEvent}
	hdrStats       = []header{{":event-type", "Stats"}, {":content-type", "text/xml"}, hdrEvent}
	hdrProgress    = []header{{":event-type", "Progress"}, {":content-type", "text/xml"}, hdrEvent}
	maxRecordEvent = 1 << 20
)

// Records sends a Records event (split when larger than 1 MiB).
func (e *EventWriter) Records(p []byte) error {
	for len(p) > 0 {
		n := min(len(p), maxRecordEvent)
		if err := e.message(hdrRecords, p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// Cont sends a keep-alive.
func (e *EventWriter) Cont() error { return e.message(hdrCont, nil) }

// End closes the stream successfully.
func (e *EventWriter) End() error { return e.message(hdrEnd, nil) }

// Stats sends the final byte counts.
func (e *EventWriter) Stats(s Stats) error {
	return e.message(hdrStats, []byte(s.xml("Stats")))
}

// Progress sends the byte counts so far.
func (e *EventWriter) Progress(s Stats) error {
	return e.message(hdrProgress, []byte(s.xml("Progress")))
}

// Error sends an error event; the stream ends with it.
func (e *EventWriter) Error(code, message string) error {
	return e.message([]header{{":error-code", code}, {":error-message", message}, {":message-type", "error"}}, nil)
}

// Stats are a run's byte counts: scanned is read from the object
// (compressed), processed after decompression, returned the output.
type Stats struct {
	BytesScanned, BytesProcessed, BytesReturned int64
}

func (s Stats) xml(tag string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><%s><BytesScanned>%d</BytesScanned><BytesProcessed>%d</BytesProcessed><BytesReturned>%d</BytesReturned></%s>`,
		tag, s.BytesScanned, s.BytesProcessed, s.BytesReturned, tag)
}
