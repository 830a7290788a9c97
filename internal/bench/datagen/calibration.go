package datagen

import (
	"math"
)

// MaxRatio is the highest ratio Realistic accepts.
const MaxRatio = 12.0

// zeroChunkRatio: a sample chunk that compresses better than this is
// padding or zeros, and is reproduced as zeros.
const zeroChunkRatio = 40.0

// calPoint is one measured point of the knob curve.
type calPoint struct {
	Knob, Gzip, Zstd float64
}

func (c calPoint) mean() float64 { return math.Sqrt(c.Gzip * c.Zstd) }

// paramsForRatio inverts the calibration curve: the knob whose content
// compresses to target (geometric mean of gzip and zstd), interpolated
// linearly in log ratio between measured points.
func paramsForRatio(target float64, tables *litTables) chunkParams {
	if target >= zeroChunkRatio {
		return chunkParams{zero: true}
	}
	return paramsForKnob(knobForRatio(target), tables)
}

func knobForRatio(target float64) float64 {
	cal := calibration
	if target <= cal[0].mean() {
		return cal[0].Knob
	}
	lt := math.Log(target)
	for i := 1; i < len(cal); i++ {
		hi := cal[i].mean()
		if target > hi {
			continue
		}
		lo := cal[i-1].mean()
		f := (lt - math.Log(lo)) / (math.Log(hi) - math.Log(lo))
		return cal[i-1].Knob + f*(cal[i].Knob-cal[i-1].Knob)
	}
	return cal[len(cal)-1].Knob
}

// measureCurve measures the knob curve on sampleSize bytes per point. The
// table below is its output (regenerate with
// FACET_DATAGEN_CALIBRATE=1 go test -run TestCalibrationTable ./internal/bench/datagen/).
func measureCurve(c *Compressors, knobs []float64, sampleSize int) []calPoint {
	tables := newLitTables()
	out := make([]calPoint, 0, len(knobs))
	buf := make([]byte, sampleSize)
	for _, k := range knobs {
		p := paramsForKnob(k, tables)
		s := &Source{kind: Realistic, params: []chunkParams{p}}
		s.Fill(12345, buf)
		gz, zs, _ := c.Both(buf)
		out = append(out, calPoint{Knob: k, Gzip: gz, Zstd: zs})
	}
	return out
}

// calibration is measureCurve's output on 2 MiB per point: knob, gzip
// ratio, zstd ratio.
var calibration = []calPoint{
	{0.00, 0.9997, 1.0000},
	{0.05, 1.0103, 1.0000},
	{0.10, 1.0219, 1.0000},
	{0.15, 1.0346, 1.0000},
	{0.20, 1.0490, 1.0020},
	{0.25, 1.0616, 1.0076},
	{0.30, 1.0738, 1.0191},
	{0.35, 1.0877, 1.0474},
	{0.40, 1.1002, 1.0671},
	{0.45, 1.1160, 1.0907},
	{0.50, 1.1308, 1.1093},
	{0.55, 1.1472, 1.1314},
	{0.60, 1.1619, 1.1452},
	{0.65, 1.1790, 1.1604},
	{0.70, 1.1922, 1.1791},
	{0.75, 1.2108, 1.2020},
	{0.80, 1.2339, 1.2254},
	{0.85, 1.2527, 1.2465},
	{0.90, 1.2691, 1.2624},
	{0.95, 1.2908, 1.2843},
	{1.00, 1.3085, 1.3028},
	{1.05, 1.3234, 1.3027},
	{1.10, 1.3437, 1.3026},
	{1.15, 1.3638, 1.3027},
	{1.20, 1.3933, 1.3494},
	{1.25, 1.4177, 1.4123},
	{1.30, 1.4425, 1.4380},
	{1.35, 1.4715, 1.4666},
	{1.40, 1.4909, 1.4855},
	{1.45, 1.4971, 1.4922},
	{1.50, 1.5239, 1.5196},
	{1.55, 1.5738, 1.5691},
	{1.60, 1.6291, 1.6254},
	{1.65, 1.6747, 1.6715},
	{1.70, 1.7272, 1.7261},
	{1.75, 1.7842, 1.7866},
	{1.80, 1.8362, 1.8414},
	{1.85, 1.8792, 1.8899},
	{1.90, 1.9386, 1.9547},
	{1.95, 2.0309, 2.0581},
	{2.00, 2.1176, 2.1522},
	{2.05, 2.2076, 2.2425},
	{2.10, 2.3124, 2.3473},
	{2.15, 2.4202, 2.4565},
	{2.20, 2.5560, 2.5936},
	{2.25, 2.6925, 2.7320},
	{2.30, 2.8484, 2.8881},
	{2.35, 3.0354, 3.0764},
	{2.40, 3.2224, 3.2654},
	{2.45, 3.4612, 3.5058},
	{2.50, 3.7023, 3.7505},
	{2.55, 4.0173, 4.0671},
	{2.60, 4.3828, 4.4383},
	{2.65, 4.7943, 4.8562},
	{2.70, 5.3450, 5.4141},
	{2.75, 6.0756, 6.1683},
	{2.80, 6.9385, 7.0423},
	{2.81, 7.2027, 7.3100},
	{2.82, 7.3898, 7.5053},
	{2.83, 7.6401, 7.7615},
	{2.84, 8.0158, 8.1376},
	{2.85, 8.2608, 8.3833},
	{2.86, 8.5626, 8.6800},
	{2.87, 8.9317, 9.0519},
	{2.88, 9.3285, 9.4497},
	{2.89, 9.8147, 9.9155},
	{2.90, 10.3411, 10.4429},
	{2.91, 10.9190, 10.9840},
	{2.92, 11.4466, 11.4878},
	{2.93, 12.2441, 12.2316},
	{2.94, 13.0373, 12.9589},
	{2.95, 14.0377, 13.8151},
	{2.96, 14.9411, 14.5980},
	{2.97, 16.4448, 15.8237},
	{2.98, 18.0083, 16.9811},
	{2.99, 20.5470, 18.8366},
	{3.00, 24.6718, 21.5910},
}
