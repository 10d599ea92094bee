package ncclabi

import (
	"fmt"
	"strings"
)

// Pair says which of ncclbpf's types describes one of NCCL's.
type Pair struct {
	NCCL string // NCCL's typedef, e.g. "ncclProfilerEventDescr_v7_t"
	Ours string // ours: a typedef name or "struct tag"
	// Until: ours describes NCCL's type up to this member of ours, not
	// included (one struct of ours for several versions, each a prefix);
	// NCCL's size must be that member's offset. "" = sizeof ours.
	Until string
	// Rename maps an NCCL member path to ours where the names differ.
	Rename map[string]string
	// Opaque lists NCCL members (paths) that ours holds as an untyped
	// pointer (void *) and calls through a typedef: offset and size are
	// compared here, the signature by a FuncPair.
	Opaque []string
}

// FuncPair checks the signature of a member that ours holds opaque against
// one of our function-pointer typedefs.
type FuncPair struct {
	NCCL, Member string // NCCL's struct and the member's path
	Ours         string // our typedef
}

// ConstPair names an NCCL constant (an enumerator or #define) and ours.
type ConstPair struct{ NCCL, Ours string }

// Compare returns one line per difference between NCCL's struct n and
// ours o as p describes them: size, and for every leaf member of NCCL's,
// the member of ours at the same path (after Rename) with its offset, size
// and class. Members that only ours has (union members of a newer version
// that one description serves for several) are not differences.
func Compare(p Pair, n, o *Struct) []string {
	var diffs []string
	bad := func(format string, args ...any) {
		diffs = append(diffs, fmt.Sprintf("%s vs %s: ", p.NCCL, p.Ours)+fmt.Sprintf(format, args...))
	}
	size := o.Size
	if p.Until != "" {
		f := o.Field(p.Until)
		if f == nil {
			bad("ours has no member %q (Until)", p.Until)
			return diffs
		}
		size = f.Off
	}
	if n.Size != size {
		bad("size %d, ours %d", n.Size, size)
	}
	opaque := map[string]bool{}
	for _, m := range p.Opaque {
		opaque[m] = true
	}
	for _, nf := range n.Fields {
		path := nf.Path
		if r, ok := p.Rename[path]; ok {
			path = r
		}
		of := o.Field(path)
		name := nf.Path
		if name == "" {
			name = "(unnamed)"
		}
		switch {
		case of == nil:
			bad("member %s (offset %d, %d bytes) missing from ours", name, nf.Off, nf.Size)
		case of.Off != nf.Off || of.Size != nf.Size:
			bad("member %s at %d, %d bytes; ours at %d, %d bytes", name, nf.Off, nf.Size, of.Off, of.Size)
		case of.Class != nf.Class && !(opaque[nf.Path] && of.Class == "ptr" && strings.HasPrefix(nf.Class, "func(")):
			bad("member %s is %s, ours %s", name, nf.Class, of.Class)
		}
	}
	return diffs
}

// CompareFunc compares the member of an NCCL struct with our typedef.
func CompareFunc(fp FuncPair, nccl, ours *Facts) []string {
	s := nccl.Structs[fp.NCCL]
	if s == nil {
		return nil
	}
	f := s.Field(fp.Member)
	oc, ok := ours.Funcs[fp.Ours]
	switch {
	case f == nil:
		return []string{fmt.Sprintf("%s has no member %s", fp.NCCL, fp.Member)}
	case !ok:
		return []string{fmt.Sprintf("ours has no function typedef %s", fp.Ours)}
	case f.Class != oc:
		return []string{fmt.Sprintf("%s.%s is %s, ours (%s) %s", fp.NCCL, fp.Member, f.Class, fp.Ours, oc)}
	}
	return nil
}
