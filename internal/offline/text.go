package offline

import (
	"encoding/binary"
	"fmt"
	"github.com/ncclbpf/ncclbpf/internal/ncclabi"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/maps"
)

// The text form of ncclbpf run's report.

func writeRunReport(w io.Writer, rep *runReport) {
	verified := "verified"
	if !rep.Verified {
		verified = "UNVERIFIED"
	}
	if rep.Hook != "" {
		fmt.Fprintf(w, "program %s (section %s, hook %s, %s) from %s, engine %s\n", rep.Program, rep.Section, rep.Hook, verified, rep.Object, rep.Engine)
	} else {
		fmt.Fprintf(w, "program %s (section %s, no hook, %s) from %s, engine %s\n", rep.Program, rep.Section, verified, rep.Object, rep.Engine)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if rep.Hook != "" {
		fmt.Fprintf(w, "inputs (struct %s):\n", rep.Context)
		writeFieldsText(w, rep.Inputs, rep.costGrid)
	} else {
		fmt.Fprintf(w, "mem: %d bytes (r1 = its address, r2 = %d)%s\n", len(rep.Mem)/2, len(rep.Mem)/2, hexLines(rep.Mem, "  "))
	}
	if rep.Runs > 1 {
		distinct := strconv.Itoa(len(rep.Outcomes))
		if rep.OtherRuns > 0 {
			distinct = "more than " + distinct
		}
		fmt.Fprintf(w, "runs: %d, %s per run, %s distinct result(s):\n", rep.Runs, nsText(rep.NsPerRun), distinct)
		for i, oc := range rep.Outcomes {
			if i == 16 {
				fmt.Fprintf(w, "  ... %d more (--json lists %d)\n", len(rep.Outcomes)-i, len(rep.Outcomes))
				break
			}
			var outs []string
			for _, f := range oc.Outputs {
				outs = append(outs, fmt.Sprintf("%s=%v", f.Name, f.Value))
			}
			fmt.Fprintf(w, "  %d× (first: run %d) r0 = %s\n", oc.Count, oc.FirstRun,
				strings.Join(append([]string{strconv.FormatInt(int64(oc.R0), 10)}, outs...), " "))
		}
		fmt.Fprintln(w, "last run:")
	} else {
		fmt.Fprintln(w, "result:")
	}
	r0 := strconv.FormatUint(rep.R0, 10)
	if rep.R0Signed < 0 {
		r0 = fmt.Sprintf("%d (%#x)", rep.R0Signed, rep.R0)
	}
	if rep.R0Means != "" {
		r0 += "  " + rep.R0Means
	}
	fmt.Fprintf(w, "  r0 = %s\n", r0)
	writeFieldsText(w, rep.Outputs, false)
	if rep.MemAfter != "" {
		fmt.Fprintf(w, "  mem after the run:%s\n", hexLines(rep.MemAfter, "    "))
	}
	if rep.Effect != nil {
		fmt.Fprintf(w, "effect: %s\n", rep.Effect.Text)
		fmt.Fprintf(w, "without the policy NCCL would run %s\n", rep.Effect.NCCL)
	}
	for _, l := range rep.Printk {
		fmt.Fprintf(w, "printk: %s\n", l)
	}
	if len(rep.Maps) == 0 {
		fmt.Fprintln(w, "maps: none changed")
	}
	for _, m := range rep.Maps {
		writeMapText(w, &m)
	}
}

func nsText(ns float64) string {
	if ns >= 1e4 {
		return time.Duration(ns).Round(time.Microsecond / 10).String()
	}
	return strconv.FormatFloat(ns, 'f', 0, 64) + "ns"
}

func hexLines(h, indent string) string {
	var b strings.Builder
	for i := 0; i < len(h); i += 32 {
		b.WriteString("\n" + indent)
		for j := i; j < min(i+32, len(h)); j += 2 {
			if j > i {
				b.WriteByte(' ')
			}
			b.WriteString(h[j : j+2])
		}
	}
	return b.String()
}

// writeFieldsText prints fields one per line, aligned; the tuner's cost
// cells as a table.
func writeFieldsText(w io.Writer, fields []runField, costGrid bool) {
	width := 0
	for _, f := range fields {
		if !(costGrid && strings.HasPrefix(f.Name, "cost[")) {
			width = max(width, len(f.Name))
		}
	}
	var cost []runField
	for _, f := range fields {
		if costGrid && strings.HasPrefix(f.Name, "cost[") {
			cost = append(cost, f)
			continue
		}
		v := fmt.Sprint(f.Value)
		if f.Name == "comm_id" || f.Name == "avail_mask" || f.Name == "flags" {
			v = fmt.Sprintf("%#x", f.raw)
		}
		if f.Meaning != "" {
			fmt.Fprintf(w, "  %-*s = %-10s %s\n", width, f.Name, v, f.Meaning)
		} else {
			fmt.Fprintf(w, "  %-*s = %s\n", width, f.Name, v)
		}
	}
	if len(cost) == ncclabi.Cells {
		fmt.Fprintf(w, "  %-16s", "cost (µs)")
		for _, p := range hook.ProtoNames {
			fmt.Fprintf(w, " %12s", p)
		}
		fmt.Fprintln(w)
		for a := 0; a < len(hook.AlgoNames); a++ {
			fmt.Fprintf(w, "    %-14s", hook.AlgoNames[a])
			for p := 0; p < len(hook.ProtoNames); p++ {
				c := strings.TrimSuffix(cost[a*3+p].Meaning, " µs")
				if c == "unavailable" {
					c = "n/a"
				}
				fmt.Fprintf(w, " %12s", c)
			}
			fmt.Fprintln(w)
		}
	}
}

func writeMapText(w io.Writer, m *mapReport) {
	d := m.dump
	if m.Type == maps.RingBuf.String() {
		fmt.Fprintf(w, "map %s (%s, %d bytes): %d record(s) submitted\n", m.Name, m.Type, d.MaxEntries, len(m.Records))
		for i, r := range m.Records {
			fmt.Fprintf(w, "  record %d (%d bytes):%s\n", i, len(r)/2, hexLines(r, "    "))
		}
		return
	}
	state := "unchanged"
	if m.Changed {
		state = "changed"
	}
	fmt.Fprintf(w, "map %s (%s, key %d bytes, value %d bytes, %d -> %d/%d entries) %s:\n",
		m.Name, m.Type, d.KeySize, d.ValueSize, len(m.Before), len(m.After), d.MaxEntries, state)
	old := map[string]maps.Entry{}
	for _, e := range m.Before {
		old[keyText(e.Key)] = e
	}
	cur := map[string]bool{}
	const maxLines = 32
	lines := 0
	emit := func(s string) {
		if lines < maxLines {
			fmt.Fprintln(w, s)
		}
		lines++
	}
	for _, e := range m.After {
		k := keyText(e.Key)
		cur[k] = true
		o, had := old[k]
		switch {
		case !had:
			emit("  + " + k + ": " + clip(maps.FormatValue(e.Value)))
		case !sameJSON(o.Value, e.Value):
			var diffs []string
			diffValues("", o.Value, e.Value, &diffs)
			if len(diffs) > 8 {
				diffs = append(diffs[:8], fmt.Sprintf("... %d more", len(diffs)-8))
			}
			emit("  ~ " + k + ": " + strings.Join(diffs, ", "))
		default:
			if !m.Changed {
				emit("    " + k + ": " + clip(maps.FormatValue(e.Value)))
			}
		}
	}
	for _, e := range m.Before {
		if k := keyText(e.Key); !cur[k] {
			emit("  - " + k + ": " + clip(maps.FormatValue(e.Value)))
		}
	}
	if lines > maxLines {
		fmt.Fprintf(w, "  ... %d more lines (--json has everything)\n", lines-maxLines)
	}
}

// keyText formats a decoded key; keys without BTF (array indexes, the
// single entry of a global data section) show as numbers.
func keyText(k any) string {
	if b, ok := k.(maps.Bytes); ok {
		switch len(b) {
		case 0:
			return "0"
		case 4:
			return strconv.FormatUint(uint64(binary.LittleEndian.Uint32(b)), 10)
		}
	}
	return maps.FormatValue(k)
}

func clip(s string) string {
	const max = 400
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("... (%d more characters)", len(s)-max)
}

// diffValues lists "path: old -> new" for the leaves that differ.
func diffValues(path string, a, b any, out *[]string) {
	switch x := a.(type) {
	case maps.Struct:
		if y, ok := b.(maps.Struct); ok && len(x) == len(y) {
			for i := range x {
				p := x[i].Name
				if path != "" && !strings.HasSuffix(path, " ") {
					p = path + "." + p
				} else {
					p = path + p
				}
				diffValues(p, x[i].Value, y[i].Value, out)
			}
			return
		}
	case []any:
		if y, ok := b.([]any); ok && len(x) == len(y) {
			for i := range x {
				diffValues(fmt.Sprintf("%s[%d]", path, i), x[i], y[i], out)
			}
			return
		}
	case maps.PerCPU:
		if y, ok := b.(maps.PerCPU); ok {
			xs := map[int]any{}
			for _, s := range x {
				xs[s.Slot] = s.Value
			}
			ys := map[int]bool{}
			for _, s := range y {
				ys[s.Slot] = true
				old, ok := xs[s.Slot]
				if !ok { // all-zero slots are not listed
					old = zeroLike(s.Value)
				}
				diffValues(fmt.Sprintf("%sslot %d ", pathDot(path), s.Slot), old, s.Value, out)
			}
			for _, s := range x {
				if !ys[s.Slot] {
					diffValues(fmt.Sprintf("%sslot %d ", pathDot(path), s.Slot), s.Value, zeroLike(s.Value), out)
				}
			}
			return
		}
	}
	if sameJSON(a, b) {
		return
	}
	path = strings.TrimSpace(path)
	if path == "" {
		*out = append(*out, clip(maps.FormatValue(a))+" -> "+clip(maps.FormatValue(b)))
		return
	}
	*out = append(*out, path+": "+clip(maps.FormatValue(a))+" -> "+clip(maps.FormatValue(b)))
}

// zeroLike returns a decoded value of v's shape with every leaf zero.
func zeroLike(v any) any {
	switch v := v.(type) {
	case maps.Struct:
		z := make(maps.Struct, len(v))
		for i, f := range v {
			z[i] = maps.Field{Name: f.Name, Value: zeroLike(f.Value)}
		}
		return z
	case []any:
		z := make([]any, len(v))
		for i, e := range v {
			z[i] = zeroLike(e)
		}
		return z
	case maps.Bytes:
		return make(maps.Bytes, len(v))
	case int64:
		return int64(0)
	case uint64:
		return uint64(0)
	case float64:
		return float64(0)
	case bool:
		return false
	case string:
		return ""
	case maps.Pointer:
		return maps.Pointer(0)
	}
	return v
}

func pathDot(p string) string {
	if p == "" {
		return ""
	}
	return p + " "
}

// writeFields prints a hook's context layout for --fields.
func writeFields(w io.Writer, h *hook.Hook) {
	c := &h.Context
	fmt.Fprintf(w, "hook %s (sections %s): %s\n", h.Name, strings.Join(h.Sections, ", "), h.Doc)
	fmt.Fprintf(w, "context struct %s, %d bytes; returns %d..%d\n", c.Name, c.Size, h.Return.Min, h.Return.Max)
	fmt.Fprintf(w, "  %6s %4s  %-6s %-8s %s\n", "offset", "size", "access", "scope", "field")
	fs := append([]hook.Field(nil), c.Fields...)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Offset < fs[j].Offset })
	for i := range fs {
		f := &fs[i]
		acc := "read"
		if f.Access&hook.Write != 0 {
			acc = "rw"
			if f.Access&hook.Read == 0 {
				acc = "write"
			}
		}
		scope := "uniform"
		if f.Scope == hook.RankLocal {
			scope = "local"
		}
		name := f.Name
		for _, d := range c.Dims(f) {
			name += fmt.Sprintf("[%d]", d)
		}
		extra := ""
		if names := hook.EnumNames(f.Name); names != nil {
			extra = "  (" + strings.Join(names, ", ") + ")"
		}
		fmt.Fprintf(w, "  %6d %4d  %-6s %-8s %s%s\n", f.Offset, f.Size, acc, scope, name, extra)
	}
	if d := defaultsFor(h); len(d) > 0 {
		fmt.Fprintf(w, "typical values used unless set: %s\n", strings.Join(d, " "))
	}
}
