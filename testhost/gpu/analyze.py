# SPDX-License-Identifier: MIT
"""analyze.py OUT: the verdict of scripts/gpu-check.sh from the logs it wrote into OUT.

Prints what each log shows (NCCL's version choice, the plugin's load message, per-communicator
init/finalize lines, printk counts, warnings, the programs' JSON results, timings) and one line per
claim: PASS, FAIL or NOT SHOWN (with why). The last line is "GPU-CHECK: PASS" when no claim failed
(NOT SHOWN is listed, not a failure) or "GPU-CHECK: FAIL".
"""
import json
import os
import re
import statistics
import sys

RE_TUNER = re.compile(r"TUNER/Plugin: Using (\S+) \(v(\d+)\)")
RE_PROF = re.compile(r"PROFILER/Plugin: Loaded (\S+) \(v(\d+)\)")
RE_LOADED = re.compile(r"ncclbpf: policy (\S+) loaded in ([\d.]+) ms: (.*)")
RE_NOPOLICY = re.compile(r"ncclbpf: no policy")
RE_PCTX = re.compile(r"ncclbpf profiler v(\d+): context for comm (0x[0-9a-f]+|0) rank (\d+)/(\d+)")
RE_TFIN = re.compile(r"ncclbpf: communicator (0x[0-9a-f]+|0) \((\d+) ranks, (\d+) nodes, tuner v(\d+)\): (.*)")
RE_WARN = re.compile(r"NCCL WARN (.*)")
RE_PRINTK = re.compile(r"ncclbpf printk: (.*)")
RE_REACHED = re.compile(r"p2p_count reached func (\d+) count (\d+)")
RE_PAST = re.compile(r"p2p_count PAST target func (\d+) count (\d+)")
RE_JSON = re.compile(r"^(P2P_CHECK|NCCL_P2P) (\{.*\})\s*$")
FUNC_SEND, FUNC_RECV = 6, 7


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def results(text):
    out = []
    for line in (text or "").splitlines():
        m = RE_JSON.match(line.strip())
        if m:
            try:
                out.append(json.loads(m.group(2)))
            except ValueError:
                pass
    return out


class Verdict:
    def __init__(self):
        self.lines, self.failed = [], False

    def add(self, claim, state, why):
        if state == "FAIL":
            self.failed = True
        self.lines.append(f"{state:9s} {claim}: {why}")


RE_MAPHDR = re.compile(r"^map (\S+) \(")
RE_MAPENT = re.compile(r"^\s+(\S+): (-?\d+)\s*$")


def parse_dumps(text):
    """{map name: {key: value}} from `ncclbpf map dump` text (integer values; keys as integers where
    they print as such: u64 keys above 2^53 were seen printed as floats)."""
    out, cur = {}, None
    for line in (text or "").splitlines():
        m = RE_MAPHDR.match(line)
        if m:
            cur = out.setdefault(m.group(1), {})
            continue
        m = RE_MAPENT.match(line)
        if m and cur is not None:
            k = m.group(1)
            cur[int(k) if re.fullmatch(r"-?\d+", k) else k] = int(m.group(2))
    return out


def show(title, text, pats, limit=12):
    """Prints the log lines that match one of pats (trimmed of NCCL's host:pid:tid prefix)."""
    print(f"--- {title}")
    if text is None:
        print("    (no log)")
        return
    n = 0
    for line in text.splitlines():
        if any(p.search(line) for p in pats):
            s = re.sub(r"^\S+:\d+:\d+ \[\d+\] ", "", line)
            print("    " + s[:220])
            n += 1
            if n >= limit:
                print("    ...")
                break


def main():
    if len(sys.argv) != 2:
        print("usage: analyze.py OUT", file=sys.stderr)
        return 2
    out = sys.argv[1]
    v = Verdict()
    cases = {}
    for line in (read(os.path.join(out, "cases.txt")) or "").splitlines():
        p = line.split()
        if len(p) == 3:
            cases[p[0]] = (int(p[1]), p[2])
    params = dict(kv.split("=", 1) for kv in (read(os.path.join(out, "params.txt")) or "").split() if "=" in kv)
    logs = {name: read(os.path.join(out, name + ".log")) for name in cases}

    skipped = (read(os.path.join(out, "skipped.txt")) or "").split()[::2]
    print("=== cases (name, exit status, ms)")
    for name, (rc, ms) in cases.items():
        print(f"    {name:24s} rc {rc:3d} {ms} ms" + ("  TIMED OUT (hang)" if rc in (124, 137) else ""))
    env = read(os.path.join(out, "env.log"))
    if env:
        print("=== environment")
        for line in env.splitlines()[:14]:
            print("    " + line)
    ver = read(os.path.join(out, "verify.log"))
    if ver:
        print("=== ncclbpf verify on this machine")
        for line in ver.splitlines():
            print("    " + line[:220])

    if skipped:
        print("    skipped (time budget): " + ", ".join(skipped))
        v.add("every case ran", "NOT SHOWN", "skipped for the time budget: " + ", ".join(skipped))

    # 1. no crash, no hang, correct results, in every case
    bad = [f"{n} rc {rc}" for n, (rc, _) in cases.items() if rc != 0]
    v.add("no crash, no hang (every case exits 0 within its timeout)", "FAIL" if bad or not cases else "PASS",
          ", ".join(bad) if bad else f"{len(cases)} cases")
    wrong, checked = [], 0
    for name, text in logs.items():
        for r in results(text):
            checked += 1
            if not r.get("ok"):
                wrong.append(name)
        if not results(text) and cases[name][0] == 0:
            wrong.append(name + " (no result line)")
    v.add("correct results of every operation (every received buffer compared)",
          "FAIL" if wrong or not checked else "PASS", ", ".join(wrong) if wrong else f"{checked} result lines all ok")

    # 2. load and versions
    for case, label in (("py-prof", "PyTorch"), ("c-prof", "NCCL C API")):
        t = logs.get(case)
        if t is None:
            v.add(f"library loads, NCCL reports versions ({label})", "NOT SHOWN", f"case {case} not run")
            continue
        show(f"{case}: plugin load and versions", t, [RE_TUNER, RE_PROF, RE_LOADED, re.compile(r"NCCL version"),
                                                       re.compile(r"(TUNER|PROFILER)/Plugin")])
        tu, pr, ld = RE_TUNER.search(t), RE_PROF.search(t), RE_LOADED.search(t)
        ok = tu and pr and ld and tu.group(1) == "ncclbpf" and pr.group(1) == "ncclbpf"
        why = (f"tuner {tu.group(1)} v{tu.group(2)}" if tu else "no TUNER/Plugin line") + ", " + \
              (f"profiler {pr.group(1)} v{pr.group(2)}" if pr else "no PROFILER/Plugin line") + ", " + \
              (f"policy loaded in {ld.group(2)} ms ({ld.group(3)})" if ld else "no ncclbpf load line")
        v.add(f"library loads, NCCL reports versions ({label})", "PASS" if ok else "FAIL", why)

        # 3. per-communicator init / finalize
        show(f"{case}: per-communicator init/finalize", t, [RE_PCTX, RE_TFIN])
        inits = {m.group(2) for m in RE_PCTX.finditer(t)}
        fins = {m.group(1) for m in RE_TFIN.finditer(t)}
        ok = len(inits) >= 2 and inits == fins
        v.add(f"per-communicator init/finalize ({label})", "PASS" if ok else "FAIL",
              f"profiler init for {len(inits)} communicators {sorted(inits)}, tuner finalize for {len(fins)} {sorted(fins)}")

        # 4. exact counts
        res = results(t)
        r = res[-1] if res else {}
        want = r.get("sends")
        show(f"{case}: printk", t, [RE_PRINTK])
        reached = {int(m.group(1)): int(m.group(2)) for m in RE_REACHED.finditer(t)}
        past = [m.group(0) for m in RE_PAST.finditer(t)]
        reloaded = case == "py-prof" and params.get("have_reload") == "1"
        if want is None:
            v.add(f"profiler program counts send/recv exactly ({label}, printk)", "FAIL", "no result line")
        elif reloaded and not reached:
            v.add(f"profiler program counts send/recv exactly ({label}, printk)", "NOT SHOWN",
                  "no reached lines after the reload (the map dump shows the count)")
        else:
            ok = reached.get(FUNC_SEND) == want and reached.get(FUNC_RECV) == want and not past
            v.add(f"profiler program counts send/recv exactly ({label}, printk)", "PASS" if ok else "FAIL",
                  f"issued {want} sends and {r.get('recvs')} receives; reached lines {reached}; "
                  f"past-target lines {len(past)}")
        if case == "py-prof":
            end = r.get("end")
            if not end:
                v.add("map read through the control socket (ncclbpf map dump)", "NOT SHOWN",
                      "this CLI has no `map` command (control plane not in this build)")
            else:
                txt = (end.get("stdout") or "") + (end.get("stderr") or "")
                print("--- py-prof: map dump through the control socket")
                for line in txt.splitlines()[:40]:
                    print("    " + line[:220])
                d = parse_dumps(end.get("stdout"))
                cnt, byc = d.get("p2p_count", {}), d.get("p2p_by_comm", {})
                ok = cnt.get(FUNC_SEND) == want and cnt.get(FUNC_RECV) == want and \
                    sum(byc.values()) == 2 * want and len(byc) == r.get("comms", 2)
                v.add("profiler program counts send/recv exactly (map read through the control socket)",
                      "PASS" if ok else "FAIL",
                      f"issued {want} sends and {r.get('recvs')} receives; p2p_count "
                      f"{ {k: x for k, x in cnt.items() if x} }; "
                      f"p2p_by_comm {len(byc)} communicators, {sum(byc.values())} events")
                st = end.get("stdout") or ""
                m = re.search(r"profiler/p2p_end\s+(\d+) calls", st)
                m2 = re.search(r"(\d+) events dropped, (\d+) forced, (\d+) orphans", st)
                if m:
                    calls = int(m.group(1))
                    ok = calls == 2 * want and m2 is not None and m2.groups() == ("0", "0", "0")
                    v.add("the plugin's own counters agree (ncclbpf stats)", "PASS" if ok else "FAIL",
                          f"profiler/p2p_end {calls} calls (want {2 * want}); "
                          + (f"{m2.group(1)} dropped, {m2.group(2)} forced, {m2.group(3)} orphans" if m2 else
                             "no dropped/forced/orphans line"))
                b = d.get("b_count")
                if r.get("mid"):
                    nb = (b or {}).get(FUNC_SEND, 0) + (b or {}).get(FUNC_RECV, 0)
                    ok = b is not None and 0 < nb < 2 * want
                    v.add("the reloaded program ran and took over the maps", "PASS" if ok else "FAIL",
                          f"b_count (variant B only) { {k: x for k, x in (b or {}).items() if x} }: {nb} of the "
                          f"{2 * want} events after the reload; p2p_count carried on to the exact total")
            mid = r.get("mid")
            if not mid:
                v.add("reload through the control socket during the run", "NOT SHOWN",
                      "this CLI has no `reload` command (control plane not in this build)")
            else:
                txt = (mid.get("stdout") or "") + (mid.get("stderr") or "")
                print("--- py-prof: reload through the control socket (while send/recv continued)")
                for line in txt.splitlines()[:20]:
                    print("    " + line[:220])
                ok = mid.get("rc") == 0 and r.get("ok") and r.get("groups_during_mid", 0) > 0
                v.add("reload through the control socket during the run", "PASS" if ok else "FAIL",
                      f"rc {mid.get('rc')} in {mid.get('seconds')} s, {r.get('groups_during_mid')} groups "
                      f"issued while it ran; results ok {r.get('ok')}")

    # 5. unsafe and missing policies: NCCL works, exactly one ncclbpf warning
    for case, what, must in (("py-unsafe", "unsafe policy (verifier rejects)", "rejected"),
                             ("py-unsafe-join", "unsafe policy: pointers swapped across a join (verifier rejects)", "E023"),
                             ("py-missing", "missing policy file", "no such file"),
                             ("py-none", "NCCLBPF_POLICY=none", "")):
        t = logs.get(case)
        if t is None:
            v.add(what, "NOT SHOWN", f"case {case} not run")
            continue
        show(f"{case}: warnings and load message", t, [RE_WARN, RE_LOADED, RE_NOPOLICY, RE_TUNER, RE_PROF])
        warns = [m.group(1) for m in RE_WARN.finditer(t)]
        ours = [w for w in warns if "ncclbpf" in w]
        res = results(t)
        ok_res = bool(res) and all(x.get("ok") for x in res) and cases[case][0] == 0
        want = 0 if case == "py-none" else 1
        says = all(must in w for w in ours)
        ok = len(ours) == want and ok_res and says
        v.add(what, "PASS" if ok else "FAIL",
              f"{len(ours)} ncclbpf warning(s) (want {want}" + (f", saying '{must}'" if must else "") +
              f"{'' if says else ': it does not'}), {len(warns)} NCCL WARN lines in all; results ok {ok_res}")

    # 6. timings: medians over rounds, ratios to no plugin
    bench = {}
    for name, t in logs.items():
        m = re.match(r"bench-(c|py)-(noplugin|none|prof)-r(\d+)$", name)
        if not m:
            continue
        for r in results(t):
            key = (m.group(1) + ("sync" if r.get("sync") else ""), m.group(2))
            if "median_us" in r:
                bench.setdefault(key, []).append(r["median_us"])
    if bench:
        print("=== timings: microseconds per (send + recv to self) group, median over rounds "
              "(each round's value is the median of its blocks)")
        names = {"c": "NCCL C API, pipelined (1 sync per block)", "csync": "NCCL C API, stream sync after each group",
                 "py": "PyTorch batch_isend_irecv + wait, pipelined"}
        for loop in ("c", "csync", "py"):
            base = bench.get((loop, "noplugin"))
            if not base:
                continue
            b = statistics.median(base)
            row = [f"    {names[loop]}:"]
            for cfg in ("noplugin", "none", "prof"):
                xs = bench.get((loop, cfg))
                if xs:
                    med = statistics.median(xs)
                    row.append(f"{cfg} {med:.2f} us (x{med / b:.3f}, rounds {', '.join(f'{x:.2f}' for x in xs)})")
            print("  ".join(row))
        v.add("timings measured (no plugin / plugin, no policy / plugin, profiler policy)", "PASS",
              f"{sum(len(x) for x in bench.values())} timed processes")
    else:
        v.add("timings measured", "NOT SHOWN", "no bench cases ran")

    print("=== verdict")
    for line in v.lines:
        print(line)
    print("GPU-CHECK: " + ("FAIL" if v.failed else "PASS"))
    return 1 if v.failed else 0


if __name__ == "__main__":
    sys.exit(main())
