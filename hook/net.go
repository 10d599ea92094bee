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
