package policy

import (
	"strings"
	"testing"
)

// Volume policies take volume metrics in WHEN and only them; a trigger
// may set throttles and transparent block filters (nop), never a filter
// that changes the stored bytes.
func TestVolumeMetricTriggers(t *testing.T) {
	p := checkOne(t, "FOR VOLUME v1 WHEN volume_write_iops > 1000 DO SET throttle WITH write_iops=1000 TRANSIENT, SET nop TRANSIENT")
	if !p.Dynamic || p.Trigger == nil || p.Trigger.String() != "volume_write_iops > 1000" {
		t.Fatalf("trigger %v dynamic %v", p.Trigger, p.Dynamic)
	}
	checkOne(t, "FOR ALL VOLUMES WHEN volume_read_bw > 50MB/s OR volume_read_iops > 5000 DO SET throttle WITH read_bw=50MB/s")
	wantRefused(t, map[string]string{
		"FOR VOLUME v1 WHEN volume_write_iops > 5 DO SET xor WITH key=0x55": "block filter xor changes the stored bytes",
		"FOR VOLUME v1 WHEN volume_write_iops > 5 DO SET encryption":        "encryption changes the stored bytes",
		"FOR VOLUME v1 WHEN get_ops > 5 DO SET throttle WITH write_iops=5":  "metric get_ops is not measured for volumes",
		"FOR TENANT t1 WHEN volume_write_iops > 5 DO SET noop":              "measured for volumes only",
		"FOR VOLUME v1 WHEN volume_write_bw > 5ms DO SET nop":               "volume_write_bw",
	})
	if !IsVolumeMetric("volume_read_bw") || IsVolumeMetric("get_ops") {
		t.Fatal("IsVolumeMetric")
	}
}

// wantRefused checks that each policy text is refused with an error that
// contains its message.
func wantRefused(t *testing.T, cases map[string]string) {
	t.Helper()
	for src, want := range cases {
		_, err := ParseAndCheck("pol", src, testVocab())
		if err == nil {
			t.Errorf("%s: accepted", src)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}
