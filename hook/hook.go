// Package hook describes the attachment points ("hooks") that policies run
// at: which ELF section names attach there, the layout of the context that
// r1 points to and what a program may do with each field, which helpers it
// may call, and the range of values it may return.
//
// The verifier consults these descriptions and knows nothing about NCCL:
// adding a hook means adding data here, not verifier code.
//
// The contexts' layouts and marks are not written here: they are generated
// from the C headers in include/ (zz_contexts.go, by internal/ctxgen, from
// the BTF clang writes for them, marks included as declaration tags), so
// the headers are their one source. What NCCL fills in each field per ABI
// version is internal/ncclabi/ctxfill's.
package hook

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/ncclbpf/ncclbpf/helpers"
)

// Access is what a program may do with a context field.
type Access uint8

// Access rights; Write implies nothing about Read, so a writable output
// field that may also be read says Read|Write.
const (
	Read  Access = 1 << 0
	Write Access = 1 << 1
)

// Scope says whether a context input is the same on every rank of a
// communicator. Decisions taken only from RankUniform inputs are
// rank-consistent.
type Scope uint8

// Scopes.
const (
	RankUniform Scope = iota
	RankLocal
)

// Field is one member of a hook's context.
type Field struct {
	Name   string
	Offset int
	Size   int // 1, 2, 4 or 8
	Access Access
	Scope  Scope
	// Array, when > 1, says the field repeats Array times at Offset+i*Size
	// (a cost table, say); each element has the field's access and width.
	Array int
}

// Context is the memory r1 points to when the program starts.
type Context struct {
	// Name is the C struct name in include/ncclbpf.h.
	Name   string
	Size   int
	Fields []Field
}

// Range is an inclusive range of return values.
type Range struct{ Min, Max int64 }

// IsCInt reports whether the hook returns a C int: a range within int32,
// of which the host reads the low 32 bits of r0 as a signed number (clang
// writes "return -1" as w0 = -1, which leaves r0 = 0xffffffff).
func (r Range) IsCInt() bool { return r.Min >= math.MinInt32 && r.Max <= math.MaxInt32 }

// Result is the value the host takes from r0 at exit: int32(r0) for a C
// int return, all 64 bits otherwise. The verifier proves it in the range.
func (r Range) Result(r0 uint64) int64 {
	if r.IsCInt() {
		return int64(int32(uint32(r0)))
	}
	return int64(r0)
}

// Hook is one attachment point.
type Hook struct {
	// Name identifies the hook ("tuner", "profiler/coll_end", ...).
	Name string
	// Sections are the ELF section names that attach here: an exact name,
	// or a prefix ending in "/" which matches any name below it.
	Sections []string
	Context  Context
	Helpers  []helpers.ID
	Return   Range
	// Decides marks a hook whose outputs (its writable context fields)
	// and return value are a decision every rank of a communicator must
	// take alike (the tuner hooks): the verifier proves that they depend
	// on rank-uniform data only.
	Decides bool
	Doc     string
}

// FieldAt returns the field containing the size bytes at off, and the index
// of the array element, or nil if the access does not lie entirely inside
// one field (element).
func (c *Context) FieldAt(off, size int) (*Field, int) {
	for i := range c.Fields {
		f := &c.Fields[i]
		n := f.Array
		if n < 1 {
			n = 1
		}
		if off < f.Offset || off >= f.Offset+n*f.Size {
			continue
		}
		elem := (off - f.Offset) / f.Size
		start := f.Offset + elem*f.Size
		if off+size > start+f.Size {
			return nil, 0
		}
		return f, elem
	}
	return nil, 0
}

// Allows reports whether the hook permits helper id.
func (h *Hook) Allows(id helpers.ID) bool {
	for _, a := range h.Helpers {
		if a == id {
			return true
		}
	}
	return false
}

var (
	mu       sync.RWMutex
	registry = map[string]*Hook{}
)

// Register adds h to the set of known hooks. It panics on a duplicate name,
// which is a programming error.
func Register(h *Hook) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[h.Name]; dup {
		panic("BUG: hook registered twice: " + h.Name)
	}
	registry[h.Name] = h
}

// Get returns the hook called name, or nil.
func Get(name string) *Hook {
	mu.RLock()
	defer mu.RUnlock()
	return registry[name]
}

// ForSection returns the hook that a program in ELF section sec attaches
// to, or an error naming the known sections.
func ForSection(sec string) (*Hook, error) {
	mu.RLock()
	defer mu.RUnlock()
	var best *Hook
	bestLen := -1
	for _, h := range registry {
		for _, s := range h.Sections {
			match := s == sec || (strings.HasSuffix(s, "/") && strings.HasPrefix(sec, s))
			if match && len(s) > bestLen {
				best, bestLen = h, len(s)
			}
		}
	}
	if best == nil {
		return nil, fmt.Errorf("section %q: no hook attaches there (known sections: %s)", sec, strings.Join(knownSections(), ", "))
	}
	return best, nil
}

// All returns every registered hook, sorted by name.
func All() []*Hook {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]*Hook, 0, len(registry))
	for _, h := range registry {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func knownSections() []string {
	var s []string
	for _, h := range registry {
		s = append(s, h.Sections...)
	}
	sort.Strings(s)
	return s
}
