package datagen

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestCalibrationTable regenerates the calibration table when asked to,
// and otherwise checks that it is ordered, which the inversion relies on.
func TestCalibrationTable(t *testing.T) {
	if os.Getenv("FACET_DATAGEN_CALIBRATE") != "" {
		c, err := NewCompressors()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var knobs []float64
		// Finer steps at the top, where the curve is steepest.
		for i := 0; i <= 56; i++ {
			knobs = append(knobs, float64(i)*0.05)
		}
		for i := 1; i <= 20; i++ {
			knobs = append(knobs, 2.8+float64(i)*0.01)
		}
		var b strings.Builder
		for _, p := range measureCurve(c, knobs, 2<<20) {
			fmt.Fprintf(&b, "\t{%.2f, %.4f, %.4f},\n", p.Knob, p.Gzip, p.Zstd)
		}
		t.Logf("calibration:\n%s", b.String())
	}
	for i := 1; i < len(calibration); i++ {
		if calibration[i].Knob <= calibration[i-1].Knob || calibration[i].mean() <= calibration[i-1].mean() {
			t.Fatalf("calibration not increasing at %d: %+v then %+v", i, calibration[i-1], calibration[i])
		}
	}
}
