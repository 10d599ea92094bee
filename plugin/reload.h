/* SPDX-License-Identifier: MIT */
/*
 * reload.h: synchronized activation of a reloaded bundle (reload.c) and what the Go side of hot
 * reload needs from the shim. Declarations only (cgo preambles of files that //export functions).
 *
 * A reload "at seq N" must make every rank of a job switch at the same collective: tuner calls
 * whose per-communicator call_seq is >= N run the new program, earlier ones the old. The slot is
 * given a switch trampoline (a native function with the program ABI) that reads call_seq from the
 * context and jumps to the old or the new entry; the hot path of the shim is unchanged. Once every
 * communicator has passed N (or a timeout), the slot gets the new entry itself and, after a grace
 * period, the old code and the trampoline's record are free again.
 */
#ifndef NCCLBPF_RELOAD_H
#define NCCLBPF_RELOAD_H

#include <stdint.h>

/*
 * ncclbpf_reload_arm publishes in slot (NCCLBPF_SLOT_TUNER or NCCLBPF_SLOT_CHUNK_SIZE) a
 * trampoline that runs new_word's program for calls with call_seq >= at and the slot's current
 * program before. Slot words carry NCCLBPF_SLOT_* hint bits; the trampoline's word carries a hint only
 * where it holds for both programs (an input neither reads, a decision neither writes). Returns 0, or -1 for a bad slot or a slot already armed.
 * Only one reload may use the switch records at a time (the Go side serializes reloads).
 */
int ncclbpf_reload_arm(int slot, uintptr_t new_word, uint64_t at);

/*
 * ncclbpf_reload_arm_comms is ncclbpf_reload_arm with n communicators (ids[i]) that switch at
 * their own call ats[i] instead of at; n at most NCCLBPF_RELOAD_MAX_COMMS.
 */
#define NCCLBPF_RELOAD_MAX_COMMS 16
int ncclbpf_reload_arm_comms(int slot, uintptr_t new_word, uint64_t at, const uint64_t *ids, const uint64_t *ats,
                             int n);

/*
 * ncclbpf_comms_check_at compares every live communicator's getCollInfo count with its activation
 * call (ats[i] for ids[i], at for the others): live communicators; waiting, those whose count is
 * at most their call (not yet past it); late, set with the first one whose count is already at or
 * past its call (it would switch late). Takes the registry lock.
 */
struct ncclbpf_at_check {
	int live, waiting, late;
	uint64_t late_id, late_seq, late_at;
};
void ncclbpf_comms_check_at(const uint64_t *ids, const uint64_t *ats, int n, uint64_t at,
                            struct ncclbpf_at_check *out);

/*
 * ncclbpf_reload_finish publishes the armed new word in slot itself (no trampoline) and disarms
 * it. The trampoline and the old program may still run on other threads until the next grace
 * period (ncclbpf_slot_synchronize) returns 0. Returns 0, -1 if slot was not armed.
 */
int ncclbpf_reload_finish(int slot);

/*
 * ncclbpf_reload_cancel publishes the armed old word in slot again (no trampoline) and disarms it:
 * the switch never happens. The same grace-period rule as ncclbpf_reload_finish applies. Returns 0,
 * -1 if slot was not armed.
 */
int ncclbpf_reload_cancel(int slot);

/*
 * The gate of a two-phase switch. An armed switch consults it on every call at or past its
 * activation call: OPEN (a plain at-seq reload) and SWITCHED run the new program; COMMITTED is
 * moved to SWITCHED by the first such call, which runs the new program; PREPARED is moved to
 * LAPSED by the first such call, which runs the old one, as every later call does (the commit
 * came too late: this process never switches); ABORTED runs the old program. A commit moves
 * PREPARED to COMMITTED, an abort PREPARED or COMMITTED to ABORTED: each is one compare-and-swap,
 * so a process either switches at its activation call or never, and which one is known.
 */
#define NCCLBPF_GATE_OPEN 0
#define NCCLBPF_GATE_PREPARED 1
#define NCCLBPF_GATE_COMMITTED 2
#define NCCLBPF_GATE_SWITCHED 3
#define NCCLBPF_GATE_LAPSED 4
#define NCCLBPF_GATE_ABORTED 5

/* ncclbpf_gate_set sets the gate (before arming); ncclbpf_gate_cas moves it from `from` to `to`
 * and returns the state it found (== from: moved). ncclbpf_gate_lapse reports the communicator
 * and call that lapsed it. */
void ncclbpf_gate_set(int state);
int ncclbpf_gate_get(void);
int ncclbpf_gate_cas(int from, int to);
void ncclbpf_gate_lapse(uint64_t *comm_id, uint64_t *seq);

/* ncclbpf_reload_armed reports whether slot holds a switch trampoline. */
int ncclbpf_reload_armed(int slot);

/*
 * ncclbpf_comms_seq_range stores in *min and *max the smallest and largest getCollInfo count of the
 * live communicators (UINT64_MAX and 0 if there are none) and returns how many are live (slot.c;
 * takes the registry lock).
 */
int ncclbpf_comms_seq_range(uint64_t *min, uint64_t *max);

/*
 * Cost sampling (reload_cost.c). Records: 0 tuner, 1 tuner/chunk_size, 2..5 profiler hooks 1..4.
 * ncclbpf_cost_wrap resets record rec, makes it time calls of entry (a plain program entry, no
 * flag bits) and returns the trampoline to publish in the slot instead of entry (0 if rec is out
 * of range or entry is 0). Put entry back and wait for a grace period before the next wrap of the
 * same record. ncclbpf_cost_read returns the sampled calls, their TSC cycles and the longest.
 */
#define NCCLBPF_COST_RECORDS 6
uintptr_t ncclbpf_cost_wrap(int rec, uintptr_t entry);
void ncclbpf_cost_read(int rec, uint64_t *samples, uint64_t *cycles, uint64_t *max_cycles);
uint64_t ncclbpf_rdtsc(void);

#endif /* NCCLBPF_RELOAD_H */
