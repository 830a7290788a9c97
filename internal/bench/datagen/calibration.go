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
func paramsForRatio(target float64, vocab *vocabulary) chunkParams {
	if target >= zeroChunkRatio {
		return chunkParams{zero: true}
	}
	return paramsForKnob(knobForRatio(target), vocab)
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
	vocab := newVocabulary()
	out := make([]calPoint, 0, len(knobs))
	buf := make([]byte, sampleSize)
	for _, k := range knobs {
		p := paramsForKnob(k, vocab)
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
	{0.05, 1.0099, 1.0000},
	{0.10, 1.0217, 1.0000},
	{0.15, 1.0349, 1.0000},
	{0.20, 1.0471, 1.0010},
	{0.25, 1.0619, 1.0078},
	{0.30, 1.0740, 1.0193},
	{0.35, 1.0878, 1.0439},
	{0.40, 1.1003, 1.0660},
	{0.45, 1.1152, 1.0811},
	{0.50, 1.1308, 1.1113},
	{0.55, 1.1471, 1.1295},
	{0.60, 1.1628, 1.1471},
	{0.65, 1.1792, 1.1672},
	{0.70, 1.1921, 1.1805},
	{0.75, 1.2112, 1.2004},
	{0.80, 1.2347, 1.2257},
	{0.85, 1.2531, 1.2471},
	{0.90, 1.2681, 1.2608},
	{0.95, 1.2892, 1.2823},
	{1.00, 1.3061, 1.3005},
	{1.05, 1.3305, 1.3298},
	{1.10, 1.3568, 1.3621},
	{1.15, 1.3895, 1.3968},
	{1.20, 1.4320, 1.4439},
	{1.25, 1.4687, 1.4838},
	{1.30, 1.5252, 1.5424},
	{1.35, 1.5805, 1.6009},
	{1.40, 1.6470, 1.6692},
	{1.45, 1.7053, 1.7299},
	{1.50, 1.7776, 1.8025},
	{1.55, 1.8648, 1.8904},
	{1.60, 1.9677, 1.9910},
	{1.65, 2.0715, 2.0899},
	{1.70, 2.1803, 2.1900},
	{1.75, 2.3065, 2.3062},
	{1.80, 2.4771, 2.4654},
	{1.85, 2.7003, 2.6967},
	{1.90, 2.9257, 2.9439},
	{1.95, 3.2605, 3.2334},
	{2.00, 3.7811, 3.6633},
	{2.05, 3.9100, 3.7844},
	{2.10, 4.0741, 3.9306},
	{2.15, 4.2498, 4.0885},
	{2.20, 4.4350, 4.2609},
	{2.25, 4.6106, 4.4204},
	{2.30, 4.8364, 4.6321},
	{2.35, 5.0676, 4.8482},
	{2.40, 5.3209, 5.0801},
	{2.45, 5.6118, 5.3393},
	{2.50, 5.9522, 5.6486},
	{2.55, 6.3091, 5.9730},
	{2.60, 6.7581, 6.3954},
	{2.65, 7.3017, 6.8730},
	{2.70, 7.9712, 7.4769},
	{2.75, 8.8297, 8.2453},
	{2.80, 9.8132, 9.1198},
	{2.81, 9.9818, 9.2720},
	{2.82, 10.3354, 9.5822},
	{2.83, 10.6066, 9.8404},
	{2.84, 10.8853, 10.0717},
	{2.85, 11.1778, 10.3109},
	{2.86, 11.5095, 10.5964},
	{2.87, 11.8918, 10.9039},
	{2.88, 12.3321, 11.2934},
	{2.89, 12.7102, 11.6038},
	{2.90, 13.2547, 12.0690},
	{2.91, 13.8120, 12.5655},
	{2.92, 14.3136, 12.9645},
	{2.93, 15.1048, 13.5659},
	{2.94, 15.9784, 14.3031},
	{2.95, 16.9147, 14.9835},
	{2.96, 18.0055, 15.7214},
	{2.97, 19.3598, 16.6554},
	{2.98, 21.0237, 17.6675},
	{2.99, 23.3807, 19.1098},
	{3.00, 26.7839, 21.3718},
}
