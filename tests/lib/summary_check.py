#!/usr/bin/env python3
"""Checks the counting rule of a run's --json events (README, "Output"):
the last event is the one summary, files_total = files_sent +
files_skipped + files_failed + files_left, and each failed file has its
own `file` event with action "failed".

    summary_check.py EVENTS.ndjson [FIELD=VALUE ...]

Each FIELD=VALUE also checks a summary field (numbers as written).
"""
import json
import sys

events = [json.loads(line) for line in open(sys.argv[1])]
s = events[-1]
assert s["event"] == "summary", "the last event is no summary: %r" % s
assert [e["event"] for e in events].count("summary") == 1, "two summaries"
parts = (s["files_sent"], s["files_skipped"], s["files_failed"],
         s["files_left"])
assert sum(parts) == s["files_total"], \
    "sent %d + up to date %d + failed %d + left %d != total %d" % (
        parts + (s["files_total"],))
failed = [e for e in events
          if e["event"] == "file" and e["action"] == "failed"]
assert len(failed) == s["files_failed"], \
    "%d failed file events for files_failed %d" % (len(failed),
                                                    s["files_failed"])
for want in sys.argv[2:]:
    k, v = want.split("=", 1)
    assert str(s.get(k)) == v, "summary %s = %r, expected %s" % (
        k, s.get(k), v)
