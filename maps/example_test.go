package maps_test

import (
	"fmt"
	"os"

	"github.com/cilium/ebpf/btf"

	"github.com/ncclbpf/ncclbpf/helpers"
	"github.com/ncclbpf/ncclbpf/maps"
)

func Example() {
	u32 := &btf.Int{Name: "u32", Size: 4}
	m, err := maps.New(maps.Spec{Name: "calls", Type: maps.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 64,
		Key: u32, Value: u32})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	calls, _ := maps.NewTyped[uint32, uint32](m)
	calls.Update(7, 3, maps.UpdateNoExist)
	v, _ := calls.Lookup(7)
	fmt.Println("key 7:", v)

	// What an engine gets: the map handle and the native helpers.
	ref := m.Ref()
	fmt.Println(ref.Handle != 0, maps.HelperTable()[helpers.MapLookupElem].Addr != 0)

	d, _ := maps.Dump(m)
	d.WriteText(os.Stdout)
	// Output:
	// key 7: 3
	// true true
	// map calls (hash, key 4 bytes, value 4 bytes, 1/64 entries)
	//   7: 3
}
