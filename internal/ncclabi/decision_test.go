package ncclabi

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/ncclbpf/ncclbpf/hook"
)

func TestTunerContextLayout(t *testing.T) {
	in := TunerInput{CommID: 1, CallSeq: 2, Coll: 4, NBytes: 3, NumPipeOps: 1, RegBuff: -1, NRanks: 8, NNodes: 1,
		NvlDomains: 1, MinNvl: 8, MaxNvl: 8, ABI: 5}
	for i := range in.Cost {
		in.Cost[i] = float32(i)
	}
	in.Cost[4] = -1
	b := in.Context()
	h := hook.Get(hook.Tuner)
	if len(b) != h.Context.Size {
		t.Fatalf("context %d bytes, hook says %d", len(b), h.Context.Size)
	}
	le := binary.LittleEndian
	get := func(name string) uint64 {
		for _, f := range h.Context.Fields {
			if f.Name == name {
				switch f.Size {
				case 4:
					return uint64(le.Uint32(b[f.Offset:]))
				case 8:
					return le.Uint64(b[f.Offset:])
				}
			}
		}
		t.Fatalf("no field %s", name)
		return 0
	}
	for name, want := range map[string]uint64{"comm_id": 1, "call_seq": 2, "n_bytes": 3, "coll_type": 4, "reg_buff": 0xffffffff,
		"n_ranks": 8, "abi_version": 5, "avail_mask": (1<<21 - 1) &^ (1 << 4), "algorithm": 0xffffffff, "n_channels": 0} {
		if got := get(name); got != want {
			t.Errorf("%s = %#x, want %#x", name, got, want)
		}
	}
	if got := le.Uint32(b[64+4*4:]); got != math.Float32bits(-1) {
		t.Errorf("cost[1][1] bits %#x", got)
	}
}

func TestApply(t *testing.T) {
	var tbl [Cells]float32
	for i := range tbl {
		tbl[i] = float32(10 + i)
	}
	tbl[12], tbl[13], tbl[14] = -1, -1, -1 // no NVLS
	for _, tc := range []struct {
		ret         uint64
		d           Decision
		applied     bool
		dropped     bool
		algo, proto int
		channels    int
	}{
		{0, Decision{-1, -1, 0}, false, false, 0, 0, 0},
		{0, Decision{1, 2, 0}, true, false, 1, 2, 0},
		{1, Decision{1, 2, 8}, false, false, 0, 0, 0},
		{0, Decision{4, 2, 0}, false, true, 0, 0, 0},
		{0, Decision{9, 2, 0}, false, true, 0, 0, 0},
		{0, Decision{1, 2, -1}, false, true, 0, 0, 0},
		{0, Decision{1, 2, 100}, true, false, 1, 2, 64},
		{0, Decision{1, -1, 0}, true, false, 1, 0, 0},
		{0, Decision{-1, 1, 3}, true, false, 0, 1, 3},
		{0, Decision{4, -1, 0}, false, true, 0, 0, 0},
		// CollNet takes the channel count unchecked: it is not passed
		{0, Decision{2, 2, 8}, true, false, 2, 2, 0},
		{0, Decision{3, -1, 8}, true, false, 3, 0, 0},
		{0, Decision{-1, -1, 8}, true, false, 0, 0, 8},
		// the host reads the C int in the low 32 bits of r0, as verified
		{0x1_0000_0000, Decision{1, 2, 0}, true, false, 1, 2, 0},
		{0x1_0000_0001, Decision{1, 2, 8}, false, false, 0, 0, 0},
	} {
		o := Apply(tbl, tc.ret, tc.d)
		if o.Applied != tc.applied || (o.Dropped != "") != tc.dropped || o.Algorithm != tc.algo || o.Protocol != tc.proto || o.Channels != tc.channels {
			t.Errorf("ret %d %+v: %+v", tc.ret, tc.d, o)
		}
		if o.ChannelsDropped != (tc.d.Channels > 0 && o.Applied && isCollNet(o.Algorithm)) {
			t.Errorf("ret %d %+v: ChannelsDropped %v", tc.ret, tc.d, o.ChannelsDropped)
		}
	}
	// tuner v2 cannot pass a row or a column: the shim drops it; a whole
	// cell, or a decision it leaves to NCCL, is taken as for later ABIs
	for _, d := range []Decision{{1, -1, 0}, {-1, 2, 4}} {
		if o := ApplyABI(tbl, 0, d, 2); o.Applied || !strings.Contains(o.Dropped, "v2") {
			t.Errorf("v2 partial %+v: %+v, want dropped", d, o)
		}
		if o := ApplyABI(tbl, 0, d, 3); !o.Applied {
			t.Errorf("v3 partial %+v: %+v, want applied", d, o)
		}
	}
	if o := ApplyABI(tbl, 0, Decision{1, 2, 0}, 2); !o.Applied || o.Algorithm != 1 || o.Protocol != 2 {
		t.Errorf("v2 whole cell: %+v", o)
	}
	if o := ApplyABI(tbl, 0, Decision{5, -1, -1}, 2); !strings.Contains(o.Dropped, "negative channel") {
		t.Errorf("v2 partial with negative channels: %+v, want the channel count named (checked first)", o)
	}
	// channels only, NCCL's pick is CollNet Direct/LL128: not passed
	cn := tbl
	cn[7] = 1
	if o := Apply(cn, 0, Decision{-1, -1, 8}); o.Algorithm != 2 || o.Protocol != 1 || o.Channels != 0 || !o.ChannelsDropped {
		t.Errorf("channels only, CollNet picked: %+v", o)
	}
	if a, p := Pick([Cells]float32{-1, -1, -1}); a != 1 || p != 0 {
		// cells beyond the three given are 0: the first of them wins
		t.Errorf("Pick = %d,%d", a, p)
	}
	if c, err := ParseColl("allreduce"); err != nil || c != 4 {
		t.Errorf("ParseColl: %d %v", c, err)
	}
	if CellName(1, 2) != "Ring/Simple" {
		t.Error(CellName(1, 2))
	}
}
