#!/usr/bin/env python3
"""Run every ```sql block of README.md, in order, in one database (test/readme_check.sh
prepares it with test/readme_world.sql and pg_cron).

Each statement runs as written, in autocommit as psql runs it, except one substitution:
the model file the first example reads from the server's disk, /models/california.json,
is the demo model's fixture. A statement must succeed, and one that returns rows must
return at least one (an example that shows nothing is broken), except the two reports of
what a schedule did (treeshap.jobs, cron.job_run_details) before it has run, and pgTAP's
finish(), which lists failures only. pgTAP rows
must not say "not ok". Then the command the pg_cron example scheduled is run the way
pg_cron would, and its job must have explained every customer. Last, every treeshap.*
setting of pg_settings must have its row in the README's table of settings, with its
default, its range (integers) or every value it takes (enums).
"""
import os
import re
import sys

import psycopg2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the README's model file: a copy the server can read (readme_check.sh), else the checkout's
SUBSTITUTIONS = {"/models/california.json":
                 os.environ.get("TS_README_MODEL", os.path.join(ROOT, "test/fixtures/reg.json"))}
MAY_BE_EMPTY = ("cron.job_run_details", "FROM treeshap.jobs", "FROM finish()")


def sql_blocks(path):
    """(line, text) of each ```sql block of a Markdown file."""
    blocks, current, start = [], None, 0
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if current is None and line.strip() == "```sql":
            current, start = [], number + 1
        elif current is not None and line.strip() == "```":
            blocks.append((start, "".join(current)))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def statements(text):
    """Split SQL at top-level semicolons, past quotes, dollar quotes and -- comments."""
    out, start, i, n = [], 0, 0, len(text)
    while i < n:
        if text.startswith("--", i):
            i = text.find("\n", i) if "\n" in text[i:] else n
        elif text[i] == "'":
            i = text.find("'", i + 1) + 1
            while 0 < i < n and text[i] == "'":
                i = text.find("'", i + 1) + 1
            if i == 0:
                raise ValueError("unterminated quote")
        elif text[i] == "$" and re.match(r"\$\w*\$", text[i:]):
            tag = re.match(r"\$\w*\$", text[i:]).group(0)
            i = text.index(tag, i + len(tag)) + len(tag)
        elif text[i] == ";":
            out.append(text[start:i + 1].strip())
            start = i = i + 1
        else:
            i += 1
    if text[start:].strip() and not all(l.strip().startswith("--") for l in text[start:].strip().splitlines()):
        raise ValueError("a statement without its semicolon: " + text[start:].strip()[:60])
    return out


def first_line(stmt):
    """The statement's first line that is not a comment, for the report."""
    return next(l for l in stmt.splitlines() if not l.strip().startswith("--")).strip()[:90]


def run_statement(cur, stmt):
    """Run one statement; returns an error text or None, and prints what it returned."""
    for old, new in SUBSTITUTIONS.items():
        stmt = stmt.replace(old, new)
    try:
        cur.execute(stmt)
    except psycopg2.Error as e:
        return "%s: %s" % (e.pgcode, str(e).strip().splitlines()[0])
    if cur.description is None:
        print("     %s -> %s" % (first_line(stmt), cur.statusmessage))
        return None
    rows = cur.fetchall()
    print("     %s -> %d rows" % (first_line(stmt), len(rows)))
    if not rows and not any(m in stmt for m in MAY_BE_EMPTY):
        return "returned no rows"
    failed = [r for r in rows for v in r if isinstance(v, str) and v.startswith("not ok")]
    return "pgTAP: " + failed[0][0] if failed else None


def check_scheduled(cur):
    """Run the job the pg_cron example scheduled, as pg_cron would, and check its work."""
    cur.execute("SELECT command FROM cron.job WHERE jobname = 'explain-orders'")
    (command,) = cur.fetchone()
    cur.execute(command)
    cur.execute("SELECT state, rows_done, (SELECT count(*) FROM customers),"
                " (SELECT count(*) FROM public.customer_shap) FROM treeshap.jobs"
                " WHERE target = 'public.customer_shap'")
    state, done, customers, target = cur.fetchone()
    cur.execute("SELECT cron.unschedule('explain-orders')")
    ok = state == "done" and done == customers == target
    print("%s the scheduled command: state %s, %s rows explained of %s customers, %s in the target"
          % ("ok  " if ok else "FAIL", state, done, customers, target))
    return ok


def shown_default(boot_val, unit):
    """A setting's default as the README's table shows it (256MB for 262144 kB)."""
    if unit == "kB" and int(boot_val) > 0 and int(boot_val) % 1024 == 0:
        return "%dMB" % (int(boot_val) // 1024)
    return boot_val


def check_settings(cur, readme):
    """Every treeshap.* setting has a row in the README's table with its default and range."""
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(treeshap\.[a-z_]+)` \|.*$", readme, re.M)}
    cur.execute("SELECT name, vartype, boot_val, unit, min_val, max_val, enumvals"
                " FROM pg_settings WHERE name LIKE 'treeshap.%' ORDER BY name")
    failures = 0
    for name, vartype, boot, unit, lo, hi, enumvals in cur.fetchall():
        row = rows.get(name, "").replace(",", "")
        wants = ["| `%s` | `%s` |" % (name, shown_default(boot, unit))]
        wants += ["%s … %s" % (lo, hi)] if vartype == "integer" else []
        wants += ["`%s`" % v for v in enumvals or []]
        missing = [w for w in wants if w.replace(",", "") not in row]
        print("%s README documents %s%s" % ("FAIL" if missing else "ok  ", name,
                                            ": lacks " + ", ".join(missing) if missing else ""))
        failures += bool(missing)
    return failures


def main():
    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    failures = 0
    blocks = sql_blocks(os.path.join(ROOT, "README.md"))
    for line, text in blocks:
        errors = [(s, e) for s in statements(text) for e in [run_statement(cur, s)] if e]
        for stmt, error in errors:
            print("FAIL README.md:%d: %s: %s" % (line, first_line(stmt), error))
        print("%s README.md:%d" % ("FAIL" if errors else "ok  ", line))
        failures += bool(errors)
    failures += not check_scheduled(cur)
    failures += check_settings(cur, open(os.path.join(ROOT, "README.md"), encoding="utf-8").read())
    print("README examples: %d blocks and the settings table, %d failures" % (len(blocks), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
