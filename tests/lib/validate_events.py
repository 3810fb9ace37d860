#!/usr/bin/env python3
"""Checks --json output against docs/events.schema.json.

    validate_events.py [--schema FILE] [--tally FILE] [FILE...]

Reads FILEs (or stdin, also as -): each line must be one JSON object
that the schema accepts. Prints a line per violation (file, line,
event, what is wrong) on stdout and exits 1 if there was any; 2 when
the schema or a file cannot be read. --tally FILE appends a line
"LINES KIND,KIND,..." to FILE: how many lines were checked and which
events they held (tests/run.sh adds them up).
"""
import argparse
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    print("validate_events: python3-jsonschema is missing (make deps)",
          file=sys.stderr)
    sys.exit(2)

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "..", "docs", "events.schema.json")


def strict_object(pairs):
    """A JSON object whose keys are unique (the last would win silently)."""
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise ValueError("duplicate key %r" % k)
        seen[k] = v
    return seen


def reject_constant(name):
    raise ValueError("%s is not JSON" % name)


def where(err):
    """The field an error is about, as a.b[0], or ''."""
    out = ""
    for p in err.absolute_path:
        out += "[%d]" % p if isinstance(p, int) else ("." if out else "") + p
    return out


def by_event(schema, cls):
    """A validator per event: the schema with only that event's branch of
    its allOf (the others' "if" cannot hold for it), which checks a line
    as the whole schema does in a fraction of the time."""
    out = {}
    for branch in schema["allOf"]:
        kind = branch["if"]["properties"]["event"]["const"]
        out[kind] = cls(dict(schema, allOf=[branch]))
    return out


def check_stream(name, f, validator, kinds):
    """Validates the lines of f; returns (lines, violations)."""
    lines = bad = 0
    for n, raw in enumerate(f, 1):
        lines += 1
        text = raw.rstrip(b"\n").decode("utf-8", "backslashreplace")
        try:
            raw.decode("utf-8")
            ev = json.loads(text, object_pairs_hook=strict_object,
                            parse_constant=reject_constant)
        except ValueError as e:
            print("%s:%d: not a JSON object (%s): %.120r" % (name, n, e, text))
            bad += 1
            continue
        if not isinstance(ev, dict):
            print("%s:%d: not a JSON object: %.120r" % (name, n, text))
            bad += 1
            continue
        kind = ev.get("event")
        v = validator.get(kind, validator[None]) if isinstance(kind, str) \
            else validator[None]
        errs = sorted(v.iter_errors(ev), key=lambda e: list(e.path))
        for e in errs:
            field = where(e)
            print("%s:%d: event %s: %s%s" % (name, n, json.dumps(kind),
                  field + ": " if field else "", e.message))
        bad += len(errs)
        if not errs:
            kinds.add(kind)
    return lines, bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schema", default=SCHEMA)
    ap.add_argument("--tally")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    try:
        with open(args.schema) as f:
            schema = json.load(f)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        print("validate_events: %s: %s" % (args.schema, e), file=sys.stderr)
        return 2
    validator = by_event(schema, cls)
    validator[None] = cls(schema)
    lines = bad = 0
    kinds = set()
    for name in args.files or ["-"]:
        try:
            if name == "-":
                l, b = check_stream("<stdin>", sys.stdin.buffer, validator,
                                    kinds)
            else:
                with open(name, "rb") as f:
                    l, b = check_stream(name, f, validator, kinds)
        except OSError as e:
            print("validate_events: %s" % e, file=sys.stderr)
            return 2
        lines += l
        bad += b
    if args.tally:
        with open(args.tally, "a") as f:
            f.write("%d %s\n" % (lines, ",".join(sorted(kinds)) or "-"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
