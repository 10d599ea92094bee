package hook

// Net hook names: each runs when the net plugin wrapper (plugin/net.c) sees
// one kind of network event (see include/ncclbpf_net.h).
const (
	NetConn    = "net/conn"
	NetSendEnd = "net/send_end"
	NetRecvEnd = "net/recv_end"
)

// NetHookNames lists the net hooks in the order of their numeric ids in
// the C shim (NCCLBPF_NET_CONN = 1, ...).
var NetHookNames = []string{NetConn, NetSendEnd, NetRecvEnd}

// NetContext is the layout of struct ncclbpf_net_ctx, shared by all net
// hooks. Every field is read-only: net programs observe the transport and
// write maps, they never change what it does. What the network measures
// differs from rank to rank and is RankLocal; only the communicator's id,
// the hook id and the ABI version are RankUniform.
var NetContext = Context{
	Name: "ncclbpf_net_ctx",
	Size: 104,
	Fields: []Field{
		{Name: "comm_id", Offset: 0, Size: 8, Access: Read, Scope: RankUniform},
		{Name: "peer_key", Offset: 8, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "conn_id", Offset: 16, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "bytes", Offset: 24, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "posted_bytes", Offset: 32, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "start_ns", Offset: 40, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "end_ns", Offset: 48, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "duration_ns", Offset: 56, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "local_seq", Offset: 64, Size: 8, Access: Read, Scope: RankLocal},
		{Name: "tag", Offset: 72, Size: 4, Access: Read, Scope: RankLocal},
		{Name: "n", Offset: 76, Size: 4, Access: Read, Scope: RankLocal},
		{Name: "dev", Offset: 80, Size: 4, Access: Read, Scope: RankLocal},
		{Name: "kind", Offset: 84, Size: 4, Access: Read, Scope: RankLocal},
		{Name: "event", Offset: 88, Size: 4, Access: Read, Scope: RankUniform},
		{Name: "flags", Offset: 92, Size: 4, Access: Read, Scope: RankLocal},
		{Name: "abi_version", Offset: 96, Size: 4, Access: Read, Scope: RankUniform},
		{Name: "reserved", Offset: 100, Size: 4, Access: Read, Scope: RankUniform},
	},
}

var netDocs = map[string]string{
	NetConn: "runs when the wrapped net plugin's listen, connect or accept returned a connection; " +
		"kind says which, peer_key identifies the remote listener",
	NetSendEnd: "runs once per isend, at the test call that reported it done: bytes, tag, and the time " +
		"from isend to that test (host CLOCK_MONOTONIC ns; measured only for a program that reads the " +
		"times, see NCCLBPF_NET_F_UNTIMED)",
	NetRecvEnd: "runs once per irecv (all its grouped receives), at the test call that reported it done",
}

func init() {
	for _, name := range NetHookNames {
		Register(&Hook{
			Name:     name,
			Sections: []string{name},
			Context:  NetContext,
			Helpers:  ProfilerHelpers,
			Return:   Range{Min: 0, Max: 0},
			Doc:      netDocs[name],
		})
	}
}
