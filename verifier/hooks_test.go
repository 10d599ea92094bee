package verifier_test

import (
	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/hook"
)

// testCtx mirrors struct vtest_ctx in testdata/verifier/vtest.h.
var testCtx = hook.Context{
	Name: "vtest_ctx",
	Size: 72,
	Fields: []hook.Field{
		{Name: "op", Offset: 0, Size: 4, Access: hook.Read},
		{Name: "nranks", Offset: 4, Size: 4, Access: hook.Read},
		{Name: "bytes", Offset: 8, Size: 8, Access: hook.Read},
		{Name: "algo", Offset: 16, Size: 4, Access: hook.Read | hook.Write},
		{Name: "proto", Offset: 20, Size: 4, Access: hook.Write},
		// 24..31: hidden, not declared
		{Name: "cost", Offset: 32, Size: 4, Access: hook.Read | hook.Write, Array: 8},
		{Name: "small", Offset: 64, Size: 2, Access: hook.Read},
		// 66..67: padding, not declared
		{Name: "flags", Offset: 68, Size: 4, Access: hook.Read},
	},
}

// testHook allows every helper; programs return 0..255.
var testHook = &hook.Hook{
	Name:     "vtest",
	Sections: []string{"vtest", "vtest/"},
	Context:  testCtx,
	Helpers: []helpers.ID{helpers.MapLookupElem, helpers.MapUpdateElem, helpers.MapDeleteElem,
		helpers.KtimeGetNs, helpers.TracePrintk, helpers.GetPrandomU32, helpers.GetSmpProcessorID,
		helpers.RingbufOutput, helpers.RingbufReserve, helpers.RingbufSubmit, helpers.RingbufDiscard},
	Return: hook.Range{Min: 0, Max: 255},
	Doc:    "verifier tests",
}

// restrictedHook allows only the clock and random numbers; programs
// return -1..1.
var restrictedHook = &hook.Hook{
	Name:     "vtest_restricted",
	Sections: []string{"vtest_restricted"},
	Context:  testCtx,
	Helpers:  []helpers.ID{helpers.KtimeGetNs, helpers.GetPrandomU32},
	Return:   hook.Range{Min: -1, Max: 1},
	Doc:      "verifier tests: few helpers",
}

func init() {
	hook.Register(testHook)
	hook.Register(restrictedHook)
}
