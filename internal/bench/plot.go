package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strings"
	"unicode"
)

// WritePNG draws the per-tenant throughput timeline (the sources' Fig. 7
// style): MB/s on top and ops/s below, one line per tenant, with axes and
// a legend. Standard library only; text uses a built-in 5x7 font.
func (r *Report) WritePNG(w io.Writer) error {
	const W, H = 1000, 640
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	c := &canvas{img: img}

	c.text(60, 12, fmt.Sprintf("%s: per-tenant throughput (interval %gs)", r.Name, r.IntervalS), color.Black, 2)
	series := func(f func(Stats) float64) [][]float64 {
		out := make([][]float64, len(r.Tenants))
		for i, t := range r.Tenants {
			for _, s := range t.Seconds {
				out[i] = append(out[i], f(s))
			}
		}
		return out
	}
	c.panel(image.Rect(70, 50, W-190, 320), "MB/S", series(func(s Stats) float64 { return s.MBPerSec }), r.IntervalS)
	c.panel(image.Rect(70, 360, W-190, 600), "OPS/S", series(func(s Stats) float64 { return s.OpsPerSec }), r.IntervalS)
	c.text(70+(W-260)/2-40, 622, "TIME (S)", color.Black, 1)

	// Legend.
	for i, t := range r.Tenants {
		y := 60 + i*18
		col := palette(i)
		c.fill(image.Rect(W-175, y, W-155, y+3), col)
		c.text(W-148, y-5, t.Name, color.Black, 1)
	}
	return png.Encode(w, img)
}

type canvas struct{ img *image.RGBA }

func palette(i int) color.RGBA {
	cols := [...]color.RGBA{
		{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
		{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	}
	return cols[i%len(cols)]
}

func (c *canvas) fill(r image.Rectangle, col color.Color) {
	draw.Draw(c.img, r.Intersect(c.img.Bounds()), image.NewUniform(col), image.Point{}, draw.Src)
}

// line draws a 2-pixel line (Bresenham, thickened).
func (c *canvas) line(x0, y0, x1, y1 int, col color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		c.img.SetRGBA(x0, y0, col)
		c.img.SetRGBA(x0, y0+1, col)
		c.img.SetRGBA(x0+1, y0, col)
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x0 += sx
		} else {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int { return max(v, -v) }

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// niceStep picks a tick step of 1, 2 or 5 × 10^k giving about n ticks.
func niceStep(maxV float64, n int) float64 {
	if maxV <= 0 {
		return 1
	}
	raw := maxV / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

func fmtTick(v float64) string {
	switch {
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case v*10 == math.Trunc(v*10):
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// panel draws axes, ticks, grid and one line per series (points at the
// middle of their interval).
func (c *canvas) panel(area image.Rectangle, label string, series [][]float64, interval float64) {
	var maxY float64
	n := 0
	for _, s := range series {
		n = max(n, len(s))
		for _, v := range s {
			maxY = max(maxY, v)
		}
	}
	stepY := niceStep(maxY*1.05, 5)
	topY := math.Max(stepY, math.Ceil(maxY*1.05/stepY)*stepY)
	span := float64(max(n, 1)) * interval
	stepX := niceStep(span, 10)
	px := func(t float64) int { return area.Min.X + int(t/span*float64(area.Dx())) }
	py := func(v float64) int { return area.Max.Y - int(v/topY*float64(area.Dy())) }
	grid := color.RGBA{225, 225, 225, 255}
	for v := 0.0; v <= topY+stepY/2; v += stepY {
		y := py(v)
		c.fill(image.Rect(area.Min.X, y, area.Max.X, y+1), grid)
		s := fmtTick(v)
		c.text(area.Min.X-8-6*len(s), y-3, s, color.Black, 1)
	}
	for t := 0.0; t <= span+1e-9; t += stepX {
		x := px(t)
		c.fill(image.Rect(x, area.Min.Y, x+1, area.Max.Y), grid)
		s := fmtTick(t)
		c.text(x-3*len(s), area.Max.Y+6, s, color.Black, 1)
	}
	c.fill(image.Rect(area.Min.X, area.Min.Y, area.Min.X+1, area.Max.Y+1), color.Black)
	c.fill(image.Rect(area.Min.X, area.Max.Y, area.Max.X, area.Max.Y+1), color.Black)
	c.text(area.Min.X-60, area.Min.Y-14, label, color.Black, 1)
	for i, s := range series {
		col := palette(i)
		for j := 1; j < len(s); j++ {
			t0, t1 := (float64(j-1)+0.5)*interval, (float64(j)+0.5)*interval
			c.line(px(t0), py(s[j-1]), px(t1), py(s[j]), col)
		}
		if len(s) == 1 {
			c.fill(image.Rect(px(interval/2)-2, py(s[0])-2, px(interval/2)+2, py(s[0])+2), col)
		}
	}
}

// text draws s with the 5x7 font at (x, y) (top left), scaled.
func (c *canvas) text(x, y int, s string, col color.Color, scale int) {
	for _, r := range strings.ToUpper(s) {
		g, ok := glyph(r)
		if !ok {
			g, _ = glyph('?')
		}
		for row, bits := range g {
			for colI := range 5 {
				if bits[colI] == '#' {
					c.fill(image.Rect(x+colI*scale, y+row*scale, x+(colI+1)*scale, y+(row+1)*scale), col)
				}
			}
		}
		x += 6 * scale
	}
}

// glyph returns the 5x7 bitmap of r, rows top to bottom.
func glyph(r rune) ([7]string, bool) {
	if unicode.IsSpace(r) {
		return [7]string{".....", ".....", ".....", ".....", ".....", ".....", "....."}, true
	}
	var rows string
	switch r {
	case '0':
		rows = ".###.|#...#|#..##|#.#.#|##..#|#...#|.###."
	case '1':
		rows = "..#..|.##..|..#..|..#..|..#..|..#..|.###."
	case '2':
		rows = ".###.|#...#|....#|...#.|..#..|.#...|#####"
	case '3':
		rows = "####.|....#|....#|.###.|....#|....#|####."
	case '4':
		rows = "...#.|..##.|.#.#.|#..#.|#####|...#.|...#."
	case '5':
		rows = "#####|#....|####.|....#|....#|#...#|.###."
	case '6':
		rows = "..##.|.#...|#....|####.|#...#|#...#|.###."
	case '7':
		rows = "#####|....#|...#.|..#..|.#...|.#...|.#..."
	case '8':
		rows = ".###.|#...#|#...#|.###.|#...#|#...#|.###."
	case '9':
		rows = ".###.|#...#|#...#|.####|....#|...#.|.##.."
	case 'A':
		rows = ".###.|#...#|#...#|#####|#...#|#...#|#...#"
	case 'B':
		rows = "####.|#...#|#...#|####.|#...#|#...#|####."
	case 'C':
		rows = ".###.|#...#|#....|#....|#....|#...#|.###."
	case 'D':
		rows = "####.|#...#|#...#|#...#|#...#|#...#|####."
	case 'E':
		rows = "#####|#....|#....|####.|#....|#....|#####"
	case 'F':
		rows = "#####|#....|#....|####.|#....|#....|#...."
	case 'G':
		rows = ".###.|#...#|#....|#.###|#...#|#...#|.####"
	case 'H':
		rows = "#...#|#...#|#...#|#####|#...#|#...#|#...#"
	case 'I':
		rows = ".###.|..#..|..#..|..#..|..#..|..#..|.###."
	case 'J':
		rows = "..###|...#.|...#.|...#.|...#.|#..#.|.##.."
	case 'K':
		rows = "#...#|#..#.|#.#..|##...|#.#..|#..#.|#...#"
	case 'L':
		rows = "#....|#....|#....|#....|#....|#....|#####"
	case 'M':
		rows = "#...#|##.##|#.#.#|#.#.#|#...#|#...#|#...#"
	case 'N':
		rows = "#...#|#...#|##..#|#.#.#|#..##|#...#|#...#"
	case 'O':
		rows = ".###.|#...#|#...#|#...#|#...#|#...#|.###."
	case 'P':
		rows = "####.|#...#|#...#|####.|#....|#....|#...."
	case 'Q':
		rows = ".###.|#...#|#...#|#...#|#.#.#|#..#.|.##.#"
	case 'R':
		rows = "####.|#...#|#...#|####.|#.#..|#..#.|#...#"
	case 'S':
		rows = ".####|#....|#....|.###.|....#|....#|####."
	case 'T':
		rows = "#####|..#..|..#..|..#..|..#..|..#..|..#.."
	case 'U':
		rows = "#...#|#...#|#...#|#...#|#...#|#...#|.###."
	case 'V':
		rows = "#...#|#...#|#...#|#...#|#...#|.#.#.|..#.."
	case 'W':
		rows = "#...#|#...#|#...#|#.#.#|#.#.#|#.#.#|.#.#."
	case 'X':
		rows = "#...#|#...#|.#.#.|..#..|.#.#.|#...#|#...#"
	case 'Y':
		rows = "#...#|#...#|.#.#.|..#..|..#..|..#..|..#.."
	case 'Z':
		rows = "#####|....#|...#.|..#..|.#...|#....|#####"
	case '.':
		rows = ".....|.....|.....|.....|.....|.##..|.##.."
	case ',':
		rows = ".....|.....|.....|.....|.##..|..#..|.#..."
	case ':':
		rows = ".....|.##..|.##..|.....|.##..|.##..|....."
	case '/':
		rows = ".....|....#|...#.|..#..|.#...|#....|....."
	case '-':
		rows = ".....|.....|.....|#####|.....|.....|....."
	case '_':
		rows = ".....|.....|.....|.....|.....|.....|#####"
	case '(':
		rows = "...#.|..#..|.#...|.#...|.#...|..#..|...#."
	case ')':
		rows = ".#...|..#..|...#.|...#.|...#.|..#..|.#..."
	case '%':
		rows = "##...|##..#|...#.|..#..|.#...|#..##|...##"
	case '=':
		rows = ".....|.....|#####|.....|#####|.....|....."
	case '+':
		rows = ".....|..#..|..#..|#####|..#..|..#..|....."
	case '<':
		rows = "...#.|..#..|.#...|#....|.#...|..#..|...#."
	case '>':
		rows = ".#...|..#..|...#.|....#|...#.|..#..|.#..."
	case '?':
		rows = ".###.|#...#|....#|...#.|..#..|.....|..#.."
	default:
		return [7]string{}, false
	}
	var g [7]string
	copy(g[:], strings.Split(rows, "|"))
	return g, true
}
