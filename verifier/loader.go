package verifier

import (
	"github.com/ncclbpf/ncclbpf/hook"
	"github.com/ncclbpf/ncclbpf/loader"
)

// MapInfos converts the loader's map specs into the verifier's, keeping
// their order (LD_IMM64 map indexes refer to it).
func MapInfos(c *loader.CollectionSpec) []MapInfo {
	out := make([]MapInfo, len(c.Maps))
	for i, m := range c.Maps {
		out[i] = MapInfo{Name: m.Name, Type: m.Type, KeySize: m.KeySize, ValueSize: m.ValueSize,
			MaxEntries: m.MaxEntries, ReadOnly: m.ReadOnly, Flags: m.Flags}
		if m.ReadOnly {
			out[i].Contents = m.Contents
		}
	}
	return out
}

// ForProgram returns the Config that verifies program p of collection c
// against hook h: the collection's maps and p's BTF line information as
// the Source of error positions.
func ForProgram(c *loader.CollectionSpec, p *loader.ProgramSpec, h *hook.Hook) *Config {
	return &Config{Hook: h, Maps: MapInfos(c), Source: func(pc int) (string, int, int, string) {
		if l := p.SourceAt(pc); l != nil {
			return l.File, l.Line, l.Col, l.Source
		}
		return "", 0, 0, ""
	}}
}
