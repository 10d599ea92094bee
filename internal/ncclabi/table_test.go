package ncclabi

import "fmt"

// pairs: every struct of every ABI version libncclbpf.so exports or
// accepts, and the type of ours that describes it. Each pair must be
// checked against at least one release (TestEveryPairChecked).
var pairs = func() []Pair {
	var ps []Pair
	add := func(p Pair) { ps = append(ps, p) }

	// Tuner v2..v7.
	for v := 2; v <= 7; v++ {
		add(Pair{NCCL: fmt.Sprintf("ncclTuner_v%d_t", v), Ours: fmt.Sprintf("nb_tuner_v%d_t", v)})
	}
	for v := 5; v <= 6; v++ {
		add(Pair{NCCL: fmt.Sprintf("ncclNvlDomainInfo_v%d_t", v), Ours: "nb_nvl_info_t"})
		add(Pair{NCCL: fmt.Sprintf("ncclTunerConstants_v%d_t", v), Ours: "nb_tuner_constants_t"})
	}
	add(Pair{NCCL: "ncclNvlDomainInfo_v7_t", Ours: "nb_nvl_info_t"})
	add(Pair{NCCL: "ncclTunerConstants_v7_t", Ours: "nb_tuner_constants_v7_t"})

	// Profiler v1..v7.
	for v := 1; v <= 7; v++ {
		add(Pair{NCCL: fmt.Sprintf("ncclProfiler_v%d_t", v), Ours: fmt.Sprintf("nbp_profiler_v%d_t", v)})
		descr := fmt.Sprintf("nbp_descr_v%d_t", v)
		args := "nbp_state_args_v6_t"
		if v <= 3 {
			args = "nbp_state_args_v3_t"
		}
		add(Pair{NCCL: fmt.Sprintf("ncclProfilerEventDescr_v%d_t", v), Ours: descr})
		add(Pair{NCCL: fmt.Sprintf("ncclProfilerEventStateArgs_v%d_t", v), Ours: args})
	}

	// Net v6..v12: the function tables, properties, virtual devices, configuration.
	oldOpaque := []string{"connect", "accept", "regMr", "isend", "irecv"}
	add(Pair{NCCL: "ncclNet_v6_t", Ours: "struct nbn_net_old", Until: "getDeviceMr", Opaque: oldOpaque})
	add(Pair{NCCL: "ncclNet_v7_t", Ours: "struct nbn_net_old", Until: "makeVDevice", Opaque: oldOpaque})
	add(Pair{NCCL: "ncclNet_v8_t", Ours: "struct nbn_net_old", Until: "makeVDevice", Opaque: oldOpaque})
	add(Pair{NCCL: "ncclNet_v9_t", Ours: "struct nbn_net_old", Opaque: oldOpaque})
	lc := map[string]string{"listen": "listen_", "connect": "connect_"}
	add(Pair{NCCL: "ncclNet_v10_t", Ours: "struct nbn_net_v10", Rename: lc, Opaque: []string{"listen", "connect"}})
	add(Pair{NCCL: "ncclNet_v11_t", Ours: "struct nbn_net_v11", Rename: lc, Opaque: []string{"listen", "connect"}})
	add(Pair{NCCL: "ncclNet_v12_t", Ours: "struct nbn_net_v11", Rename: lc, Opaque: []string{"listen", "connect"}})

	add(Pair{NCCL: "ncclNetProperties_v6_t", Ours: "struct nbn_props_v6"})
	v7 := map[string]string{}
	for _, m := range []string{"name", "pciPath", "guid", "ptrSupport", "speed", "port", "latency", "maxComms", "maxRecvs"} {
		v7[m] = "v6." + m
	}
	add(Pair{NCCL: "ncclNetProperties_v7_t", Ours: "struct nbn_props_v7", Rename: v7})
	add(Pair{NCCL: "ncclNetProperties_v8_t", Ours: "struct nbn_props_v8"})
	add(Pair{NCCL: "ncclNetProperties_v9_t", Ours: "struct nbn_props", Until: "maxMultiRequestSize"})
	add(Pair{NCCL: "ncclNetProperties_v10_t", Ours: "struct nbn_props", Until: "maxMultiRequestSize"})
	add(Pair{NCCL: "ncclNetProperties_v11_t", Ours: "struct nbn_props"})
	add(Pair{NCCL: "ncclNetProperties_v12_t", Ours: "struct nbn_props_v12"})
	for v := 9; v <= 11; v++ {
		add(Pair{NCCL: fmt.Sprintf("ncclNetVDeviceProps_v%d_t", v), Ours: "struct nbn_vprops"})
	}
	add(Pair{NCCL: "ncclNetVDeviceProps_v12_t", Ours: "struct nbn_vprops_v12"})
	for v := 10; v <= 12; v++ {
		add(Pair{NCCL: fmt.Sprintf("ncclNetCommConfig_v%d_t", v), Ours: "struct nbn_comm_config"})
	}

	// Env v1, v2.
	add(Pair{NCCL: "ncclEnv_v1_t", Ours: "nbe_env_v1_t"})
	add(Pair{NCCL: "ncclEnv_v2_t", Ours: "nbe_env_v2_t"})
	return ps
}()

// funcPairs: members that ours holds opaque (void *) and calls through a
// typedef, one typedef per version.
var funcPairs = []FuncPair{
	{"ncclNet_v6_t", "connect", "nbn_connect_v6_t"},
	{"ncclNet_v6_t", "accept", "nbn_accept_v6_t"},
	{"ncclNet_v6_t", "regMr", "nbn_regmr_int_t"},
	{"ncclNet_v6_t", "isend", "nbn_isend_int_t"},
	{"ncclNet_v6_t", "irecv", "nbn_irecv_int_t"},
	{"ncclNet_v7_t", "connect", "nbn_connect_v7_t"},
	{"ncclNet_v7_t", "accept", "nbn_accept_v7_t"},
	{"ncclNet_v7_t", "regMr", "nbn_regmr_int_t"},
	{"ncclNet_v7_t", "isend", "nbn_isend_int_t"},
	{"ncclNet_v7_t", "irecv", "nbn_irecv_int_t"},
	{"ncclNet_v8_t", "connect", "nbn_connect_v7_t"},
	{"ncclNet_v8_t", "accept", "nbn_accept_v7_t"},
	{"ncclNet_v8_t", "regMr", "nbn_regmr_t"},
	{"ncclNet_v8_t", "isend", "nbn_isend_int_t"},
	{"ncclNet_v8_t", "irecv", "nbn_irecv_int_t"},
	{"ncclNet_v9_t", "connect", "nbn_connect_v7_t"},
	{"ncclNet_v9_t", "accept", "nbn_accept_v7_t"},
	{"ncclNet_v9_t", "regMr", "nbn_regmr_t"},
	{"ncclNet_v9_t", "isend", "nbn_isend_v9_t"},
	{"ncclNet_v9_t", "irecv", "nbn_irecv_v9_t"},
	{"ncclNet_v10_t", "listen", "nbn_listen_v10_t"},
	{"ncclNet_v10_t", "connect", "nbn_connect_v10_t"},
	{"ncclNet_v11_t", "listen", "nbn_listen_v11_t"},
	{"ncclNet_v11_t", "connect", "nbn_connect_v11_t"},
	{"ncclNet_v12_t", "listen", "nbn_listen_v11_t"},
	{"ncclNet_v12_t", "connect", "nbn_connect_v11_t"},
}

// constPairs: NCCL's constants that ours restates (the shim's, and the
// policy header's where a policy sees NCCL's numbers).
var constPairs = []ConstPair{
	{"ncclProfileGroup", "NBP_EV_GROUP"},
	{"ncclProfileColl", "NBP_EV_COLL"},
	{"ncclProfileP2p", "NBP_EV_P2P"},
	{"ncclProfileProxyOp", "NBP_EV_PROXY_OP"},
	{"ncclProfileProxyStep", "NBP_EV_PROXY_STEP"},
	{"ncclProfileProxyCtrl", "NBP_EV_PROXY_CTRL"},
	{"ncclProfileKernelCh", "NBP_EV_KERNEL_CH"},
	{"ncclProfileNetPlugin", "NBP_EV_NET_PLUGIN"},
	{"ncclProfileGroupApi", "NBP_EV_GROUP_API"},
	{"ncclProfileCollApi", "NBP_EV_COLL_API"},
	{"ncclProfileP2pApi", "NBP_EV_P2P_API"},
	{"ncclProfileKernelLaunch", "NBP_EV_KERNEL_LAUNCH"},
	{"ncclProfileCeColl", "NBP_EV_CE_COLL"},
	{"ncclProfileCeSync", "NBP_EV_CE_SYNC"},
	{"ncclProfileCeBatch", "NBP_EV_CE_BATCH"},
	{"ncclProfileKernelPhase", "NBP_EV_KERNEL_PHASE"},
	{"ncclProfilerProxyOpInProgress_v4", "NBP_ST_PROXY_OP_IN_PROGRESS"},
	{"ncclProfilerProxyStepSendGPUWait", "NBP_ST_STEP_SEND_GPU_WAIT"},
	{"ncclProfilerProxyStepSendWait", "NBP_ST_STEP_SEND_WAIT"},
	{"ncclProfilerProxyStepRecvWait", "NBP_ST_STEP_RECV_WAIT"},
	{"ncclProfilerProxyStepRecvFlushWait", "NBP_ST_STEP_RECV_FLUSH_WAIT"},
	{"ncclProfilerProxyStepRecvGPUWait", "NBP_ST_STEP_RECV_GPU_WAIT"},
	{"ncclProfilerProxyStepSendPeerWait_v4", "NBP_ST_STEP_SEND_PEER_WAIT"},
	{"ncclProfilerKernelChStop", "NBP_ST_KERNEL_CH_STOP"},
	{"ncclProfilerGroupStartApiStop", "NBP_ST_GROUP_START_API_STOP"},
	{"ncclProfilerGroupEndApiStart", "NBP_ST_GROUP_END_API_START"},
	{"ncclProfilerKernelPhaseStop", "NBP_ST_KERNEL_PHASE_STOP"},
	{"NCCL_ALGO_UNDEF", pol("ALGO_UNDEF")},
	{"NCCL_ALGO_TREE", pol("ALGO_TREE")},
	{"NCCL_ALGO_RING", pol("ALGO_RING")},
	{"NCCL_ALGO_COLLNET_DIRECT", pol("ALGO_COLLNET_DIRECT")},
	{"NCCL_ALGO_COLLNET_CHAIN", pol("ALGO_COLLNET_CHAIN")},
	{"NCCL_ALGO_NVLS", pol("ALGO_NVLS")},
	{"NCCL_ALGO_NVLS_TREE", pol("ALGO_NVLS_TREE")},
	{"NCCL_ALGO_PAT", pol("ALGO_PAT")},
	{"NCCL_PROTO_UNDEF", pol("PROTO_UNDEF")},
	{"NCCL_PROTO_LL", pol("PROTO_LL")},
	{"NCCL_PROTO_LL128", pol("PROTO_LL128")},
	{"NCCL_PROTO_SIMPLE", pol("PROTO_SIMPLE")},
	{"NCCL_NUM_ALGORITHMS_V5", "NBT_NUM_ALGORITHMS"},
	{"NCCL_NUM_PROTOCOLS_V5", "NBT_NUM_PROTOCOLS"},
	{"NCCL_NUM_HW_LINKS_V5", "NBT_NUM_HW_LINKS"},
	{"NCCL_NUM_TUNING_SCALES_V5", "NBT_NUM_SCALES"},
	{"NCCL_NUM_COMPCAPS_V5", "NBT_NUM_COMPCAPS"},
	{"NCCL_NUM_COMPCAPS_V7", "NBT_NUM_COMPCAPS_V7"},
	{"NCCL_NET_HANDLE_MAXSIZE", "NBN_HANDLE_MAXSIZE"},
	{"NCCL_NET_MAX_REQUESTS", "NBN_MAX_REQUESTS"},
	{"NCCL_PTR_HOST", "NBN_PTR_HOST"},
	{"NCCL_PTR_CUDA", "NBN_PTR_CUDA"},
	{"NCCL_PTR_DMABUF", "NBN_PTR_DMABUF"},
	{"NCCL_NET_MAX_DEVS_PER_NIC_V11", "NBN_MAX_DEVS_PER_NIC"},
	{"NCCL_NET_MAX_DEVS_PER_NIC_V12", "NBN_MAX_DEVS_PER_NIC_V12"},
	{"NCCL_NET_ID_UNDEF", "NBN_NET_ID_UNDEF"},
}

// pol names a constant of the policy header (include/ncclbpf.h).
func pol(name string) string { return "NCCLBPF" + "_" + name }
