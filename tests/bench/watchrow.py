"""watchrow.py: a training job's checkpoints under `ferry pull --watch`.

  watchrow.py run BOX WORK COUNT EVERY_S BYTES K SEED RESULT -- WATCH_CMD...
      Starts WATCH_CMD (a `ferry pull --watch ... --json` of BOX), then
      writes COUNT checkpoints into BOX, one every EVERY_S seconds, as
      torch.save does: a zip of stored members (archive/data.pkl,
      archive/data/0..7, archive/version) written in place under its
      final, timestamped name (ckpt-YYYYmmdd-HHMMSS-N.pt), then closed.
      Checkpoint N+1 is checkpoint N with K contiguous regions of
      BYTES / 100 / K bytes (at least 1 MiB) of its tensor data rewritten
      at seeded places (the partial-update case: frozen layers); its
      tensors are BYTES long in all, WORK holds them between saves.
      Each line the watch writes is stamped on arrival (the monotonic
      clock, as the writer's close). Once the last checkpoint's `pulled`
      event came (or a time limit passed) the watch gets SIGINT. RESULT
      (JSON) holds, per checkpoint: its name, the writer's open and close,
      the `ready` and `pulled` events' times, and what its own pull said
      (summary: bytes_wire, bytes_wire_in; file: bytes_literal,
      bytes_matched). Exits 1 when a checkpoint had no `ready` event.

  watchrow.py peer RUN_JSON STDOUT TOOL N STATUS WIRE_UP WIRE_DOWN
      Prints one JSON line for a peer's run (runcmd.py's RUN_JSON, the
      command's STDOUT): a one-shot ferry pull (bytes: its summary's
      bytes_wire + bytes_wire_in) or rsync --fuzzy (bytes: --stats' Total
      bytes sent + received).

  watchrow.py judge RESULT PEERS RUNS WATCH_S BOX HERE RC WIRE_UP WIRE_DOWN
      Appends the row's runs to RUNS (report.py's NDJSON), every checkpoint
      but the first: the watch's (close to `ready`, its pull's bytes),
      the one-shot pull's and rsync's, each with the aims: bytes at most
      1.2 x rsync's + 1 MiB, close to `ready` at most WATCH_S + the
      one-shot pull's time + 1 s. Prints them per checkpoint.
"""
import filecmp
import json
import os
import random
import re
import statistics
import signal
import subprocess
import sys
import threading
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402

MIB = 1 << 20
SHARDS = 8


def rewrite_regions(path, k, nbytes, seed):
    rng = random.Random(seed)
    size = os.path.getsize(path)
    slot = size // k
    with open(path, "r+b") as f:
        for i in range(k):
            f.seek(i * slot + rng.randrange(0, slot - nbytes + 1))
            f.write(rng.randbytes(nbytes))


def save(path, data):
    """torch.save's habit: the final name, written in place, closed."""
    size = os.path.getsize(data)
    shard = size // SHARDS
    with open(path, "wb") as fo, open(data, "rb") as fi:
        with zipfile.ZipFile(fo, "w", zipfile.ZIP_STORED) as z:
            z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
            for i in range(SHARDS):
                n = shard if i < SHARDS - 1 else size - shard * i
                with z.open("archive/data/%d" % i, "w") as m:
                    while n > 0:
                        b = fi.read(min(n, 4 * MIB))
                        m.write(b)
                        n -= len(b)
            z.writestr("archive/version", "3\n")


def reader(stream, events, lock, cond):
    for line in stream:
        t = time.monotonic()
        try:
            e = json.loads(line)
        except ValueError:
            continue
        e["_t"] = t
        with lock:
            events.append(e)
            cond.notify_all()


def cmd_run(argv):
    box, work = argv[1], argv[2]
    count, every = int(argv[3]), float(argv[4])
    size, k, seed = int(argv[5]), int(argv[6]), int(argv[7])
    result, cmd = argv[8], argv[10:]
    region = max(size // 100 // k, MIB)
    data = os.path.join(work, "tensors")
    gen.gen_weights(data, size, seed)

    events, lock = [], threading.Lock()
    cond = threading.Condition(lock)
    watch = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL)
    th = threading.Thread(target=reader,
                          args=(watch.stdout, events, lock, cond))
    th.start()
    time.sleep(min(every, 2.0))

    ckpts = []
    t0 = time.monotonic()
    for n in range(1, count + 1):
        due = t0 + (n - 1) * every
        if time.monotonic() < due:
            time.sleep(due - time.monotonic())
        if n > 1:
            rewrite_regions(data, k, region, seed * 1000 + n)
        name = "ckpt-%s-%d.pt" % (time.strftime("%Y%m%d-%H%M%S",
                                                time.gmtime()), n)
        t_open = time.monotonic()
        save(os.path.join(box, name), data)
        ckpts.append({"n": n, "name": name, "open": t_open,
                      "close": time.monotonic()})

    def pulled(name):
        return any(e.get("event") == "watch" and e.get("path") == name and
                   e.get("action") in ("pulled", "changed") for e in events)

    deadline = time.monotonic() + 3 * every + 120
    with lock:
        while not pulled(ckpts[-1]["name"]) and \
                time.monotonic() < deadline and watch.poll() is None:
            cond.wait(0.5)
    watch.send_signal(signal.SIGINT)
    try:
        watch.wait(30)
    except subprocess.TimeoutExpired:
        watch.kill()
        watch.wait()
    th.join()

    # A checkpoint's own pull: the events after the last unit's `pulled`
    # up to its own.
    start, missing = 0, 0
    for i, e in enumerate(events):
        if e.get("event") != "watch" or \
                e.get("action") not in ("pulled", "changed"):
            continue
        c = next((c for c in ckpts if c["name"] == e.get("path")), None)
        if c is None:
            continue
        c["pulled"] = e["_t"]
        for f in events[start:i]:
            ev = f.get("event")
            if ev == "ready" and os.path.basename(f["path"]) == c["name"]:
                c["ready"] = f["_t"]
            elif ev == "file" and os.path.basename(f["path"]) == c["name"]:
                for key in ("bytes_literal", "bytes_matched"):
                    c[key] = f.get(key, 0)
            elif ev == "summary":
                c["bytes_wire"] = f.get("bytes_wire", 0)
                c["bytes_wire_in"] = f.get("bytes_wire_in", 0)
                # Where the time went: the pull itself, and before it
                # the wait for a look and the look's listing.
                c["pull_s"] = f.get("elapsed_s", 0)
                c["pull_start"] = f["_t"] - c["pull_s"]
        start = i + 1
    for c in ckpts:
        if "ready" not in c:
            missing += 1
            print("watchrow: %s had no ready event" % c["name"],
                  file=sys.stderr)
    with open(result, "w") as f:
        json.dump({"region": region, "k": k, "every_s": every,
                   "checkpoints": ckpts, "watch_rc": watch.returncode,
                   "events": events}, f, indent=1)
        f.write("\n")
    return 1 if missing else 0


def cmd_peer(argv):
    run, out, tool, n, status, up, down = argv
    r = json.load(open(run))
    rec = {"tool": tool, "n": int(n), "status": status, "rc": r["rc"],
           "wall_s": r["wall_s"], "rss_client_kib": r["rss_kib"]}
    if up != "":
        rec["wire_up"], rec["wire_down"] = int(up), int(down)
    text = open(out, errors="replace").read()
    if tool == "rsync_fuzzy":
        rec["bytes"] = sum(int(m.replace(",", "")) for m in re.findall(
            r"^Total bytes (?:sent|received): ([0-9,]+)", text, re.M))
    for line in text.splitlines():
        if '"event":"summary"' in line:
            s = json.loads(line)
            rec["bytes"] = s.get("bytes_wire", 0) + s.get("bytes_wire_in", 0)
            rec["ferry"] = {k: s[k] for k in ("bytes_wire", "bytes_wire_in",
                            "bytes_literal", "bytes_matched") if k in s}
    print(json.dumps(rec))
    return 0


NAMES = {"ferry_watch": "ferry pull --watch",
         "ferry_once": "ferry pull (one-shot)",
         "rsync_fuzzy": "rsync --fuzzy"}


def cmd_judge(argv):
    result, peers, runs, watch_s, box, here, rc, up, down = argv
    res = json.load(open(result))
    by = {}
    for line in open(peers):
        if line.strip():
            p = json.loads(line)
            by[(p["tool"], p["n"])] = p
    recs = []
    out = []
    for i, c in enumerate(res["checkpoints"]):
        if i == 0:
            continue
        once = by.get(("ferry_once", i), {})
        rs = by.get(("rsync_fuzzy", i), {})
        w = {"kind": "run", "scenario": "watch", "tool": NAMES["ferry_watch"],
             "rep": i, "rc": 0 if "ready" in c else 1,
             "status": "ok" if "ready" in c else "failed",
             "notes": "wire: the checkpoint's pull's own count "
                      "(bytes_wire + bytes_wire_in)"}
        if "ready" in c:
            w["wall_s"] = round(c["ready"] - c["close"], 3)
            w["wire_up"] = c.get("bytes_wire", 0)
            w["wire_down"] = c.get("bytes_wire_in", 0)
            w["ferry"] = {k: c[k] for k in ("bytes_literal", "bytes_matched",
                          "bytes_wire", "bytes_wire_in") if k in c}
            if "pull_start" in c:
                w["to_pull_s"] = round(c["pull_start"] - c["close"], 3)
                w["pull_s"] = c["pull_s"]
            if not filecmp.cmp(os.path.join(box, c["name"]),
                               os.path.join(here, c["name"]), shallow=False):
                w["status"] = "mismatch"
                w["reason"] = "%s differs" % c["name"]
        else:
            w["reason"] = "%s: no ready event" % c["name"]
        if "wall_s" in w and "wall_s" in once and "bytes" in rs:
            w["bound_s"] = round(float(watch_s) + once["wall_s"] + 1, 3)
            w["bytes_bound"] = int(1.2 * rs["bytes"] + (1 << 20))
            w["rsync_bytes"] = rs["bytes"]
            w["time_ok"] = int(w["wall_s"] <= w["bound_s"])
            w["bytes_ok"] = int(w["wire_up"] + w["wire_down"] <=
                                w["bytes_bound"])
        recs.append(w)
        for tool, p in (("ferry_once", once), ("rsync_fuzzy", rs)):
            if not p:
                continue
            r = {"kind": "run", "scenario": "watch", "tool": NAMES[tool],
                 "rep": i}
            r.update({k: v for k, v in p.items() if k not in ("tool", "n")})
            if tool == "rsync_fuzzy":
                r["notes"] = "the new checkpoint beside the last (cp); " \
                             "--stats bytes in the aim"
            else:
                r["notes"] = "the new checkpoint beside the last (pulled)"
            recs.append(r)
        out.append("watch #%d %s: close->ready %s s (to the pull's start %s"
                   " s, the pull %s s; bound %s s, one-shot %s s), ferry %s"
                   " B, rsync --stats %s B (bound %s B)" % (
                       i, c["name"], w.get("wall_s"), w.get("to_pull_s"),
                       w.get("pull_s"), w.get("bound_s"), once.get("wall_s"),
                       w.get("wire_up", 0) + w.get("wire_down", 0),
                       rs.get("bytes"), w.get("bytes_bound")))
    # The whole watch run's connections, looks included, by ss.
    if recs and up != "":
        recs[0]["watch_wire_all"] = int(up) + int(down)
        recs[0]["watch_checkpoints"] = len(res["checkpoints"])
    if rc != "0":
        recs.append({"kind": "run", "scenario": "watch",
                     "tool": NAMES["ferry_watch"], "rep": 0,
                     "status": "failed", "reason": "watchrow.py exit %s" % rc})
    with open(runs, "a") as f:
        for r in recs:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    for line in out:
        print(line, file=sys.stderr)
    return 0


def main(argv):
    if len(argv) >= 12 and argv[1] == "run" and argv[10] == "--":
        return cmd_run(argv[1:])
    if len(argv) == 9 and argv[1] == "peer":
        return cmd_peer(argv[2:])
    if len(argv) == 11 and argv[1] == "judge":
        return cmd_judge(argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
