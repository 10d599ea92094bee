package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/ncclbpf/ncclbpf/control"
)

// palette colours outcomes in the order they first appear; "nccl" (left to
// NCCL) is always grey and "refused" red.
var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {148, 103, 189, 255}, {140, 86, 75, 255},
	{227, 119, 194, 255}, {188, 189, 34, 255}, {23, 190, 207, 255}, {0, 63, 92, 255}, {255, 166, 0, 255},
	{106, 61, 154, 255}, {177, 89, 40, 255},
}

var (
	grey = color.RGBA{170, 170, 170, 255}
	red  = color.RGBA{214, 39, 40, 255}
)

// outcomeName is how an outcome cell is written in the report.
func outcomeName(cell int) string {
	a, p := control.CellNames(cell)
	if a == p {
		return a
	}
	return a + "/" + p
}

// sizeTicks are the x axis's ticks of the size buckets minS..maxS, every
// other one labelled.
func sizeTicks(minS, maxS int) []plot.Tick {
	var xt []plot.Tick
	for b := minS; b <= maxS; b++ {
		label := ""
		if (b-minS)%2 == 0 {
			label = sizeTick(b)
		}
		xt = append(xt, plot.Tick{Value: float64(b), Label: label})
	}
	return xt
}

// sizeTick names size bucket b by its upper bound ("4MiB").
func sizeTick(b int) string {
	n := control.SizeBucketBytes(b)
	for _, u := range []struct {
		s string
		v uint64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v {
			return fmt.Sprintf("%d%s", n/u.v, u.s)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// cellKey is a (collective, size bucket) of the decision map.
type cellKey struct{ coll, size int }

// decisionSummary is what the decision map shows of one (collective,
// size bucket): the outcome chosen most, and whether that outcome's cell
// was costlier than NCCL's cheapest at least once.
type decisionSummary struct {
	cell    int
	differs bool
	count   uint64
	total   uint64
}

// summarize aggregates the decisions of all processes and communicators.
func summarize(procs []Process) map[cellKey]*decisionSummary {
	type ck struct {
		k    cellKey
		cell int
	}
	counts := map[ck]uint64{}
	differs := map[ck]bool{}
	totals := map[cellKey]uint64{}
	for _, p := range procs {
		for _, c := range p.Metrics.Comms {
			for _, d := range c.Decisions {
				k := ck{cellKey{d.Coll, d.SizeBucket}, d.Cell}
				counts[k] += d.Count
				differs[k] = differs[k] || (d.Differs && d.Count > 0)
				totals[k.k] += d.Count
			}
		}
	}
	out := map[cellKey]*decisionSummary{}
	for k, n := range counts {
		s := out[k.k]
		if s == nil || n > s.count || (n == s.count && k.cell < s.cell) {
			out[k.k] = &decisionSummary{cell: k.cell, differs: differs[k], count: n, total: totals[k.k]}
		}
	}
	return out
}

// svgOf renders p as an SVG element (no XML prologue: it is inlined).
func svgOf(p *plot.Plot, w, h vg.Length) (string, error) {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return s, nil
}

// decisionMap draws the decision map; it returns "" when there is no
// decision to show.
func decisionMap(procs []Process) (string, []legendEntry, error) {
	sum := summarize(procs)
	if len(sum) == 0 {
		return "", nil, nil
	}
	var colls, cells []int
	seenColl, seenCell := map[int]bool{}, map[int]bool{}
	minS, maxS := math.MaxInt, 0
	for k, s := range sum {
		if !seenColl[k.coll] {
			seenColl[k.coll] = true
			colls = append(colls, k.coll)
		}
		if !seenCell[s.cell] {
			seenCell[s.cell] = true
			cells = append(cells, s.cell)
		}
		minS, maxS = min(minS, k.size), max(maxS, k.size)
	}
	sort.Ints(colls)
	sort.Ints(cells)
	row := map[int]int{}
	for i, c := range colls {
		row[c] = i
	}
	colour := map[int]color.Color{}
	next := 0
	for _, c := range cells {
		switch c {
		case control.CellDefault:
			colour[c] = grey
		case control.CellRefused:
			colour[c] = red
		default:
			colour[c] = palette[next%len(palette)]
			next++
		}
	}

	p := plot.New()
	p.Title.Text = "Decision map: the outcome chosen most per collective and size (x: not NCCL's cheapest)"
	p.X.Label.Text = "collective size (bucket upper bound)"
	p.Y.Label.Text = "collective"
	p.Legend.Top = true
	var keys []cellKey
	for k := range sum {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].coll != keys[j].coll {
			return keys[i].coll < keys[j].coll
		}
		return keys[i].size < keys[j].size
	})
	xys := make(plotter.XYs, len(keys))
	var crosses plotter.XYs
	for i, k := range keys {
		xys[i] = plotter.XY{X: float64(k.size), Y: float64(row[k.coll])}
		if sum[k].differs {
			crosses = append(crosses, xys[i])
		}
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return "", nil, err
	}
	sc.GlyphStyleFunc = func(i int) draw.GlyphStyle {
		return draw.GlyphStyle{Color: colour[sum[keys[i]].cell], Radius: vg.Points(9), Shape: draw.BoxGlyph{}}
	}
	p.Add(sc)
	if len(crosses) > 0 {
		cs, err := plotter.NewScatter(crosses)
		if err != nil {
			return "", nil, err
		}
		cs.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(5), Shape: draw.CrossGlyph{}}
		p.Add(cs)
	}
	p.X.Tick.Marker = plot.ConstantTicks(sizeTicks(minS, maxS))
	p.X.Min, p.X.Max = float64(minS)-0.8, float64(maxS)+0.8
	var yt []plot.Tick
	for i, c := range colls {
		yt = append(yt, plot.Tick{Value: float64(i), Label: control.CollName(c)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(yt)
	p.Y.Min, p.Y.Max = -0.8, float64(len(colls))-0.2
	var legend []legendEntry
	for _, c := range cells {
		r, g, b, _ := colour[c].RGBA()
		legend = append(legend, legendEntry{Name: outcomeName(c), CSS: fmt.Sprintf("rgb(%d,%d,%d)", r>>8, g>>8, b>>8)})
	}
	h := vg.Length(140 + 55*len(colls))
	svg, err := svgOf(p, vg.Length(60+30*(maxS-minS+1))+200, h)
	return svg, legend, err
}

// legendEntry is one colour of the decision map, listed in HTML next to
// the chart (readable at any size).
type legendEntry struct {
	Name, CSS string
}

// latencyKey is a curve of a latency chart.
type latencyKey struct{ algo, proto int }

// latencyCharts draws, per collective, the mean latency versus size per
// algorithm and protocol (log scale).
func latencyCharts(procs []Process) ([]chart, error) {
	type agg struct{ count, sum uint64 }
	data := map[int]map[latencyKey]map[int]*agg{}
	for _, p := range procs {
		for _, l := range p.Metrics.Latency {
			if l.Count == 0 {
				continue
			}
			if data[l.Coll] == nil {
				data[l.Coll] = map[latencyKey]map[int]*agg{}
			}
			k := latencyKey{l.Algo, l.Proto}
			if data[l.Coll][k] == nil {
				data[l.Coll][k] = map[int]*agg{}
			}
			a := data[l.Coll][k][l.SizeBucket]
			if a == nil {
				a = &agg{}
				data[l.Coll][k][l.SizeBucket] = a
			}
			a.count += l.Count
			a.sum += l.SumNS
		}
	}
	var colls []int
	for c := range data {
		colls = append(colls, c)
	}
	sort.Ints(colls)
	var out []chart
	for _, c := range colls {
		p := plot.New()
		p.Title.Text = "Latency versus size: " + control.CollName(c) + " (mean, from the profiler)"
		p.X.Label.Text = "collective size (bucket upper bound)"
		p.Y.Label.Text = "latency (µs)"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = decadeTicks{}
		p.Legend.Top = true
		p.Legend.Left = true
		var keys []latencyKey
		for k := range data[c] {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			return keys[i].algo*8+keys[i].proto < keys[j].algo*8+keys[j].proto
		})
		minS, maxS := math.MaxInt, 0
		for i, k := range keys {
			var sizes []int
			for s := range data[c][k] {
				sizes = append(sizes, s)
			}
			sort.Ints(sizes)
			xys := make(plotter.XYs, len(sizes))
			for j, s := range sizes {
				a := data[c][k][s]
				xys[j] = plotter.XY{X: float64(s), Y: math.Max(float64(a.sum)/float64(a.count)/1e3, 1e-3)}
				minS, maxS = min(minS, s), max(maxS, s)
			}
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, err
			}
			col := palette[i%len(palette)]
			line.Color = col
			line.Width = vg.Points(1.5)
			points.Color = col
			points.Shape = draw.CircleGlyph{}
			p.Add(line, points)
			p.Legend.Add(control.AlgoName(k.algo)+"/"+control.ProtoName(k.proto), line, points)
		}
		p.X.Tick.Marker = plot.ConstantTicks(sizeTicks(minS, maxS))
		p.X.Min, p.X.Max = float64(minS)-0.5, float64(maxS)+0.5
		svg, err := svgOf(p, vg.Length(60+30*(maxS-minS+1))+200, 320)
		if err != nil {
			return nil, err
		}
		out = append(out, chart{Title: control.CollName(c), SVG: svg})
	}
	return out, nil
}

// chart is one rendered chart.
type chart struct {
	Title, SVG string
}

// decadeTicks label the powers of ten of a log axis (µs: 1, 10, 100, ...)
// and mark the 2x and 5x steps between them.
type decadeTicks struct{}

// Ticks implements plot.Ticker.
func (decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		v := math.Pow(10, e)
		for _, m := range []float64{1, 2, 5} {
			x := v * m
			if x < lo || x > hi {
				continue
			}
			t := plot.Tick{Value: x}
			if m == 1 {
				t.Label = strconv.FormatFloat(x, 'g', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	labelled := 0
	for _, t := range ts {
		if t.Label != "" {
			labelled++
		}
	}
	if labelled < 2 { // a range within one decade: label the 2x and 5x steps too
		for i := range ts {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', -1, 64)
		}
	}
	return ts
}
