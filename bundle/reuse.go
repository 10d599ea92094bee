package bundle

import (
	"sort"

	"github.com/ncclbpf/ncclbpf/maps"
)

// reusable returns the map of offered that a new map built from spec may
// be replaced by: same name, compatible definition, not closed. Global
// data and read-only maps are never reused (their contents belong to the
// new object). When no program of the new bundle writes the map (writes
// false), its tuner takes it for rank-uniform data: a map that programs
// wrote (maps.Map.ProgramWritten) may hold rank-local data and is not
// reused.
func reusable(offered []*maps.Map, spec maps.Spec, fresh, writes bool) *maps.Map {
	if fresh {
		return nil
	}
	for _, m := range offered {
		if m == nil || m.Name() != spec.Name || m.Handle() == 0 || m.ReadOnlyForPrograms() {
			continue
		}
		if !writes && m.ProgramWritten() {
			continue
		}
		if m.Compatible(spec) == nil {
			return m
		}
	}
	return nil
}

// Reused lists, sorted, the names of the maps this bundle took from
// Options.Reuse instead of creating them.
func (b *Bundle) Reused() []string {
	var names []string
	for m := range b.borrowed {
		names = append(names, m.Name())
	}
	sort.Strings(names)
	return names
}

// TakeOver makes the maps b reused from prev b's own, once b has replaced
// prev for good: prev.Close then leaves them open and b.Close closes them.
// Until TakeOver, prev owns them and b.Close leaves them alone, so a
// bundle that fails to publish can be closed without harming prev.
func (b *Bundle) TakeOver(prev *Bundle) {
	if prev == nil {
		return
	}
	for m := range b.borrowed {
		if prev.borrowed == nil {
			prev.borrowed = map[*maps.Map]bool{}
		}
		if prev.owns(m) {
			prev.borrowed[m] = true
			delete(b.borrowed, m)
		}
	}
}

// owns reports whether m is one of b's maps that b.Close would close.
func (b *Bundle) owns(m *maps.Map) bool {
	if b.borrowed[m] {
		return false
	}
	for _, x := range b.Maps {
		if x == m {
			return true
		}
	}
	return false
}
