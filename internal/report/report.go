package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"
	"time"
)

// MaxMapRows bounds the rows shown per map.
const MaxMapRows = 256

// Options configure Write.
type Options struct {
	// Host names the node in the title.
	Host string
	// Now is the time printed as "generated at" (time.Now if zero).
	Now time.Time
	// Warnings are listed at the top (processes that did not answer).
	Warnings []string
}

type mapView struct {
	Name, Type string
	Rows       [][2]string
	More       int
}

type procView struct {
	PID                                 int
	Exe, Policy, SHA256, Attached, Load string
	Running                             bool
	Comms                               int
	Decisions, Applied, Refused, Differ uint64
	Maps                                []mapView
	MapErrors                           []string
}

type page struct {
	Host, Generated string
	Warnings        []string
	Procs           []procView
	DecisionMap     template.HTML
	Legend          []legendEntry
	Latency         []struct {
		Title string
		SVG   template.HTML
	}
}

// Write renders the report of procs as one HTML page.
func Write(w io.Writer, procs []Process, o Options) error {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	pg := page{Host: o.Host, Generated: o.Now.UTC().Format(time.RFC3339), Warnings: o.Warnings}
	sort.Slice(procs, func(i, j int) bool { return procs[i].Metrics.Info.PID < procs[j].Metrics.Info.PID })
	for _, p := range procs {
		m := p.Metrics
		v := procView{PID: m.Info.PID, Exe: m.Info.Exe, Running: m.Info.Running, Policy: m.Info.Policy, SHA256: m.Info.SHA256,
			Attached: m.Info.Attached, Load: m.Info.LoadMessage, Comms: len(m.Comms), MapErrors: p.MapErrors}
		for _, c := range m.Comms {
			v.Applied += c.Applied
			v.Refused += c.Rejected
			for _, d := range c.Decisions {
				v.Decisions += d.Count
				if d.Differs {
					v.Differ += d.Count
				}
			}
		}
		for _, raw := range p.Maps {
			mv, err := mapOf(raw)
			if err != nil {
				v.MapErrors = append(v.MapErrors, err.Error())
				continue
			}
			v.Maps = append(v.Maps, mv)
		}
		pg.Procs = append(pg.Procs, v)
	}
	svg, legend, err := decisionMap(procs)
	if err != nil {
		return fmt.Errorf("report: decision map: %w", err)
	}
	pg.DecisionMap, pg.Legend = template.HTML(svg), legend
	charts, err := latencyCharts(procs)
	if err != nil {
		return fmt.Errorf("report: latency charts: %w", err)
	}
	for _, c := range charts {
		pg.Latency = append(pg.Latency, struct {
			Title string
			SVG   template.HTML
		}{c.Title, template.HTML(c.SVG)})
	}
	return pageTemplate.Execute(w, pg)
}

// mapOf decodes a map dump for the page.
func mapOf(raw json.RawMessage) (mapView, error) {
	var d struct {
		Name    string `json:"name"`
		Type    string `json:"type"`
		Entries []struct {
			Key   json.RawMessage `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return mapView{}, fmt.Errorf("map dump: %w", err)
	}
	mv := mapView{Name: d.Name, Type: d.Type}
	for i, e := range d.Entries {
		if i >= MaxMapRows {
			mv.More = len(d.Entries) - MaxMapRows
			break
		}
		mv.Rows = append(mv.Rows, [2]string{string(e.Key), string(e.Value)})
	}
	return mv, nil
}

var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>ncclbpf report{{if .Host}}: {{.Host}}{{end}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1400px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; }
figure { margin: 0.5em 0; overflow-x: auto; } figure svg { background: #fff; }
.legend span { display: inline-block; margin-right: 1em; } .legend svg { vertical-align: middle; }
.warn { color: #a40; } code { font-size: 0.9em; } details { margin: 0.4em 0; }
</style>
</head>
<body>
<h1>ncclbpf report{{if .Host}}: {{.Host}}{{end}}</h1>
<p>Generated {{.Generated}}. {{len .Procs}} process(es).</p>
{{range .Warnings}}<p class="warn">{{.}}</p>{{end}}
<h2>Processes</h2>
<table id="procs"><tr><th>pid</th><th>executable</th><th>policy</th><th>sha256</th><th>attached</th><th>comms</th><th>decisions</th><th>applied</th><th>refused</th><th>not NCCL's cheapest</th></tr>
{{range .Procs}}<tr><td class="num">{{.PID}}</td><td>{{.Exe}}</td><td>{{if .Running}}{{.Policy}}{{else}}none ({{.Load}}){{end}}</td><td><code>{{printf "%.12s" .SHA256}}</code></td><td>{{.Attached}}</td><td class="num">{{.Comms}}</td><td class="num">{{.Decisions}}</td><td class="num">{{.Applied}}</td><td class="num">{{.Refused}}</td><td class="num">{{.Differ}}</td></tr>
{{end}}</table>
<h2>Decision map</h2>
{{if .DecisionMap}}<p class="legend">{{range .Legend}}<span><svg width="12" height="12"><rect width="12" height="12" fill="{{.CSS}}"/></svg> {{.Name}}</span>{{end}}<span>&#x2715; the chosen cell cost more than NCCL's cheapest</span></p>
<figure id="decision-map" class="plot">{{.DecisionMap}}</figure>
{{else}}<p>No decision counted yet.</p>{{end}}
<h2>Latency versus size</h2>
{{range .Latency}}<figure class="plot latency" data-collective="{{.Title}}">{{.SVG}}</figure>
{{else}}<p>No latency measured: no profiler context, or NCCL sent no collective events (a profiler program, or NCCLBPF_LATENCY=on, asks for them).</p>{{end}}
<h2>Policy maps</h2>
{{range .Procs}}{{$pid := .PID}}{{range .Maps}}<details open><summary>pid {{$pid}}: map <b>{{.Name}}</b> ({{.Type}}, {{len .Rows}} entries shown{{if .More}}, {{.More}} more{{end}})</summary>
<table class="map"><tr><th>key</th><th>value</th></tr>{{range .Rows}}<tr><td><code>{{index . 0}}</code></td><td><code>{{index . 1}}</code></td></tr>{{end}}</table></details>
{{end}}{{range .MapErrors}}<p class="warn">pid {{$pid}}: {{.}}</p>{{end}}{{end}}
<script>
(function () {
	var n = 0;
	document.querySelectorAll('figure.plot svg').forEach(function (s) {
		var b = s.getBoundingClientRect();
		if (b.width > 0 && b.height > 0 && s.querySelector('path, rect')) n++;
	});
	document.body.setAttribute('data-plots-rendered', String(n));
	document.body.setAttribute('data-plots', String(document.querySelectorAll('figure.plot').length));
})();
</script>
</body>
</html>
`))
