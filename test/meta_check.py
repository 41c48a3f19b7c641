#!/usr/bin/env python3
"""Validate META.json against the PGXN Meta Spec 1.0.0 (https://pgxn.org/meta/spec.txt),
the rules PGXN's validators apply (required keys, SemVer versions, terms, licences,
prereq phases and relationships, paths), and against the repository: the versions are
pg_treeshap.control's default_version, and the files it names exist.
    python3 test/meta_check.py [META.json]
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEMVER = (r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
          r"(?:-(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
          r"(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?")
RANGE_ITEM = r"(?:(?:[=!]=|[<>]=?)\s*)?" + SEMVER
LICENSES = {"agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd",
            "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit",
            "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5", "postgresql", "qpl_1_0",
            "ssleay", "sun", "zlib", "open_source", "restricted", "unrestricted", "unknown"}
TOP_KEYS = {"name", "version", "abstract", "maintainer", "license", "provides", "meta-spec",
            "description", "generated_by", "tags", "no_index", "prereqs", "release_status",
            "resources"}
REQUIRED = ("name", "version", "abstract", "maintainer", "license", "provides", "meta-spec")
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}


def custom(key):
    """x_ and X_ keys are free in every object of the spec."""
    return re.match(r"^[xX]_.", key) is not None


def is_term(s):
    """At least two characters, no slash, backslash, space or control character."""
    return isinstance(s, str) and re.fullmatch(r"[^/\\\s\x00-\x1f\x7f]{2,}", s) is not None


def is_string(s):
    return isinstance(s, str) and len(s) > 0


def is_path(s):
    """A relative path with unix separators."""
    return is_string(s) and not s.startswith("/") and "\\" not in s


def is_range(r):
    if r == 0 or r == "0":
        return True
    return isinstance(r, str) and all(re.fullmatch(RANGE_ITEM, part.strip())
                                      for part in r.split(","))


def check_license(lic, errors):
    names = [lic] if isinstance(lic, str) else lic if isinstance(lic, list) else None
    if names is not None:
        if not names or any(n not in LICENSES for n in names):
            errors.append("license: %r is not one of the spec's names" % (lic,))
    elif not (isinstance(lic, dict) and lic and all(is_string(v) for v in lic.values())):
        errors.append("license: neither a name, a list of names nor an object of URIs")


def check_provides(provides, errors):
    if not isinstance(provides, dict) or not provides:
        errors.append("provides: must be an object of at least one extension")
        return
    for name, ext in provides.items():
        if not is_term(name) or not isinstance(ext, dict):
            errors.append("provides: %r is not a term with an object" % name)
            continue
        for key in ("file", "version"):
            if key not in ext:
                errors.append("provides.%s: missing mandatory field %r" % (name, key))
        for key in ext:
            if key not in ("file", "version", "abstract", "docfile") and not custom(key):
                errors.append("provides.%s: unknown field %r" % (name, key))
        for key in ("file", "docfile"):
            if key in ext and not is_path(ext[key]):
                errors.append("provides.%s.%s: not a relative unix path" % (name, key))
        if "version" in ext and not re.fullmatch(SEMVER, str(ext["version"])):
            errors.append("provides.%s.version: %r is not SemVer" % (name, ext["version"]))


def check_prereqs(prereqs, errors):
    if not isinstance(prereqs, dict) or not prereqs:
        errors.append("prereqs: must be a non-empty object")
        return
    for phase, relations in prereqs.items():
        if phase not in PHASES and not custom(phase):
            errors.append("prereqs: unknown phase %r" % phase)
            continue
        for rel, reqs in relations.items():
            if rel not in RELATIONS and not custom(rel):
                errors.append("prereqs.%s: unknown relationship %r" % (phase, rel))
                continue
            if not isinstance(reqs, dict) or not reqs:
                errors.append("prereqs.%s.%s: must be a non-empty object" % (phase, rel))
                continue
            for name, r in reqs.items():
                if not is_term(name) or not is_range(r):
                    errors.append("prereqs.%s.%s.%s: %r is not a version range" % (phase, rel, name, r))


def check_spec(meta):
    """Errors of META.json against the spec."""
    errors = ["missing mandatory field %r" % k for k in REQUIRED if k not in meta]
    errors += ["unknown top-level field %r" % k for k in meta if k not in TOP_KEYS and not custom(k)]
    if "name" in meta and not is_term(meta["name"]):
        errors.append("name: not a term")
    if "version" in meta and not re.fullmatch(SEMVER, str(meta["version"])):
        errors.append("version: %r is not SemVer" % meta["version"])
    for key in ("abstract", "description", "generated_by"):
        if key in meta and not is_string(meta[key]):
            errors.append("%s: must be a non-empty string" % key)
    m = meta.get("maintainer")
    if m is not None and not (is_string(m) or (isinstance(m, list) and m and all(map(is_string, m)))):
        errors.append("maintainer: a string or a non-empty list of strings")
    if "license" in meta:
        check_license(meta["license"], errors)
    if "provides" in meta:
        check_provides(meta["provides"], errors)
    spec = meta.get("meta-spec")
    if spec is not None and not (isinstance(spec, dict) and re.fullmatch(r"1\.0\.\d+", str(spec.get("version")))):
        errors.append("meta-spec.version: must be 1.0.x")
    tags = meta.get("tags")
    if tags is not None and not (isinstance(tags, list) and tags and all(
            isinstance(t, str) and 2 <= len(t) <= 255 and re.fullmatch(r"[^/\\\x00-\x1f\x7f]+", t) for t in tags)):
        errors.append("tags: a non-empty list of 2 to 255 characters without slashes")
    if meta.get("release_status", "stable") not in ("stable", "testing", "unstable"):
        errors.append("release_status: stable, testing or unstable")
    if "prereqs" in meta:
        check_prereqs(meta["prereqs"], errors)
    return errors


def check_repository(meta):
    """Errors of META.json against the repository it describes."""
    control = open(os.path.join(ROOT, "pg_treeshap.control")).read()
    default = re.search(r"default_version\s*=\s*'([^']*)'", control).group(1)
    errors = []
    ext = meta.get("provides", {}).get("pg_treeshap", {})
    for where, version in (("version", meta.get("version")), ("provides.pg_treeshap.version", ext.get("version"))):
        if version != default:
            errors.append("%s is %r, pg_treeshap.control's default_version %r" % (where, version, default))
    for key in ("file", "docfile"):
        if key in ext and not os.path.isfile(os.path.join(ROOT, ext[key])):
            errors.append("provides.pg_treeshap.%s: %s does not exist" % (key, ext[key]))
    return errors


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "META.json")
    meta = json.load(open(path))
    errors = check_spec(meta) + check_repository(meta)
    for e in errors:
        print("FAIL META.json: " + e)
    if not errors:
        print("ok   META.json is valid PGXN Meta Spec 1.0.0 and names version %s" % meta["version"])
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
