package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The control plane over a job's store: every process of a multi-node
// job registers in the job's store at startup (host, pid, rank) and
// serves control requests that arrive in its mailbox there, so that
// agree, reload --all and check reach every rank of the job from any node,
// without the sockets of other hosts. Keys, under Prefix (one per job):
//
//	ranks/count           the number of registrations (an ADD counter)
//	ranks/N               registration N (JSON Registration)
//	mbox/N/next           the last request number handed out for N
//	mbox/N/req/K          request K (JSON Request), deleted once answered
//	mbox/N/resp/K         its answer (JSON Response), deleted once read
//
// A process waits on its next request key (the store wakes it: no
// polling), answers with the same handler as its control socket, and moves
// on. A request nobody wrote after its number was taken is skipped after
// SkipAfter.

// Store is what the control plane needs of a job store.
type Store interface {
	Set(key string, value []byte) error
	Get(key string) ([]byte, bool, error)
	Add(key string, delta int64) (int64, error)
	// Wait blocks until every key is set, at most d (ErrStoreTimeout).
	Wait(d time.Duration, keys ...string) error
	Delete(key string) (bool, error)
	Close() error
}

// Registration is a process's record in the job's store.
type Registration struct {
	Slot int64  `json:"slot"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
	Rank string `json:"rank,omitempty"` // $RANK under torchrun
}

// Name is how the operator knows the process.
func (r Registration) Name() string {
	s := fmt.Sprintf("%s pid %d", r.Host, r.PID)
	if r.Rank != "" {
		s = "rank " + r.Rank + " (" + s + ")"
	}
	return s
}

// Environment of the job store (read by the plugin and the CLI).
const (
	// EnvStore names the job's store: tcpstore (torchrun's, at
	// MASTER_ADDR:MASTER_PORT), tcpstore://HOST:PORT, or etcd://HOST:PORT.
	EnvStore = "NCCLBPF_STORE"
	// EnvJob names the job (the keys' prefix); default
	// TORCHELASTIC_RUN_ID, else "job".
	EnvJob = "NCCLBPF_JOB"
)

// JobPrefix is the key prefix of job (empty: from the environment).
func JobPrefix(job string, getenv func(string) string) string {
	if job == "" {
		job = getenv(EnvJob)
	}
	if job == "" {
		job = getenv("TORCHELASTIC_RUN_ID")
	}
	if job == "" {
		job = "job"
	}
	return "ncclbpf/" + job + "/"
}

// OpenStore connects to the store named by url (see EnvStore).
func OpenStore(url string, getenv func(string) string, timeout time.Duration) (Store, error) {
	switch {
	case url == "tcpstore":
		host, port := getenv("MASTER_ADDR"), getenv("MASTER_PORT")
		if host == "" || port == "" {
			return nil, errors.New("store tcpstore: MASTER_ADDR and MASTER_PORT are not both set (torchrun sets them); or give tcpstore://HOST:PORT")
		}
		return DialTCPStore(host+":"+port, timeout)
	case strings.HasPrefix(url, "tcpstore://"):
		return DialTCPStore(strings.TrimPrefix(url, "tcpstore://"), timeout)
	case strings.HasPrefix(url, "etcd://"):
		return nil, fmt.Errorf("store %s: etcd is not supported by this build", url)
	}
	return nil, fmt.Errorf("store %q: want tcpstore, tcpstore://HOST:PORT or etcd://HOST:PORT", url)
}

// Register records this process in the job's store and returns its record.
func Register(kv Store, prefix string, getenv func(string) string) (Registration, error) {
	host, _ := os.Hostname()
	n, err := kv.Add(prefix+"ranks/count", 1)
	if err != nil {
		return Registration{}, err
	}
	r := Registration{Slot: n, Host: host, PID: os.Getpid(), Rank: getenv("RANK")}
	b, _ := json.Marshal(r)
	return r, kv.Set(prefix+"ranks/"+strconv.FormatInt(n, 10), b)
}

// SkipAfter is how long a process waits for a request whose number was
// taken before it moves past it.
const SkipAfter = 10 * time.Second

// ServeStore answers the requests of slot's mailbox with h until stop is
// closed. warn is called once per outage of the store.
func ServeStore(kv Store, prefix string, slot int64, h Handler, stop <-chan struct{}, warn func(error)) {
	box := prefix + "mbox/" + strconv.FormatInt(slot, 10) + "/"
	k := int64(1)
	var missingSince time.Time
	down := false
	for {
		select {
		case <-stop:
			return
		default:
		}
		key := box + "req/" + strconv.FormatInt(k, 10)
		err := kv.Wait(time.Second, key)
		if err != nil {
			if !errors.Is(err, ErrStoreTimeout) {
				if !down {
					warn(err)
				}
				down = true
				time.Sleep(time.Second)
				continue
			}
			// Skip a number taken by a client that never wrote its request.
			if n, err := kv.Add(box+"next", 0); err == nil && n > k {
				if missingSince.IsZero() {
					missingSince = time.Now()
				} else if time.Since(missingSince) > SkipAfter {
					k, missingSince = k+1, time.Time{}
				}
			}
			continue
		}
		down, missingSince = false, time.Time{}
		var resp *Response
		b, ok, err := kv.Get(key)
		switch {
		case err != nil || !ok:
			continue
		default:
			req, perr := ParseRequest(b)
			if perr != nil {
				resp = errResponse(perr)
			} else {
				resp = safeHandle(h, req)
			}
		}
		if resp.Error == "" {
			resp.OK = true
		}
		out, _ := json.Marshal(resp)
		kv.Set(box+"resp/"+strconv.FormatInt(k, 10), out)
		kv.Delete(key)
		k++
	}
}

func safeHandle(h Handler, req *Request) (resp *Response) {
	defer func() {
		if r := recover(); r != nil {
			resp = &Response{Error: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	if resp = h(req); resp == nil {
		resp = &Response{Error: "internal error: no response"}
	}
	return resp
}

// StoreRank is a process of the job, reached through the job's store.
type StoreRank struct {
	Store  Store
	Prefix string
	Reg    Registration
}

// Name implements Rank.
func (s StoreRank) Name() string { return s.Reg.Name() }

// Call implements Rank: the request goes into the process's mailbox and
// the answer is awaited there, at most timeout.
func (s StoreRank) Call(req *Request, timeout time.Duration) (*Response, error) {
	box := s.Prefix + "mbox/" + strconv.FormatInt(s.Reg.Slot, 10) + "/"
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	k, err := s.Store.Add(box+"next", 1)
	if err != nil {
		return nil, err
	}
	ks := strconv.FormatInt(k, 10)
	if err := s.Store.Set(box+"req/"+ks, b); err != nil {
		return nil, err
	}
	if err := s.Store.Wait(timeout, box+"resp/"+ks); err != nil {
		s.Store.Delete(box + "req/" + ks)
		if errors.Is(err, ErrStoreTimeout) {
			return nil, fmt.Errorf("%s: no answer within %v through the store (the process is gone or hung)", s.Name(), timeout)
		}
		return nil, err
	}
	line, ok, err := s.Store.Get(box + "resp/" + ks)
	if err != nil || !ok {
		return nil, fmt.Errorf("%s: answer lost: %v", s.Name(), err)
	}
	s.Store.Delete(box + "resp/" + ks)
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("%s: answer to %s: %w", s.Name(), req.Op, err)
	}
	if !resp.OK {
		return &resp, errors.New(resp.Error)
	}
	return &resp, nil
}

// StoreRanks lists the processes registered in the job's store.
func StoreRanks(kv Store, prefix string) ([]Rank, error) {
	n, err := kv.Add(prefix+"ranks/count", 0)
	if err != nil {
		return nil, err
	}
	var out []Rank
	for i := int64(1); i <= n; i++ {
		b, ok, err := kv.Get(prefix + "ranks/" + strconv.FormatInt(i, 10))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		var r Registration
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("registration %d: %w", i, err)
		}
		out = append(out, StoreRank{Store: kv, Prefix: prefix, Reg: r})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no process registered under %s in the store (set %s in the job's environment)", prefix, EnvStore)
	}
	return out, nil
}
