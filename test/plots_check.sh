#!/bin/bash
# The plots in a real browser (issue 20): plot_summary, plot_waterfall and
# plot_dependence of the demo's model (test/fixtures/reg.json, the houses of
# test/houses.sql) rendered by headless Chromium to PNG, then checked on the
# picture: its size is the SVG's, it is not blank, the beeswarm shows one band of
# coloured dots per feature, the waterfall one bar per feature, the dependence
# plot its points. TS_PLOTS_DOCS=1 also writes the PNGs to docs/ (the README's).
set -euo pipefail
cd "$(dirname "$0")/.."
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "plots-check: FAIL (no chromium: test/deps.sh installs it)"; exit 1; }
TS_PGPORT=${TS_PLOTS_PGPORT:-54347} source test/cluster.sh >/dev/null
out=$(mktemp -d /tmp/pg_treeshap_plots.XXXXXX)
chmod 755 "$out"
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_treeshap" -f test/houses.sql \
  -c "SELECT 1 FROM treeshap.load_model('california', pg_read_binary_file('$(ts_server_file test/fixtures/reg.json)'))" >/dev/null
declare -A plots=(
    [summary]="SELECT treeshap.plot_summary('california', 'SELECT * FROM houses')"
    [waterfall]="SELECT treeshap.plot_waterfall('california', 'SELECT * FROM houses WHERE id = 5')"
    [dependence]="SELECT treeshap.plot_dependence('california', 'SELECT * FROM houses', 'MedInc')")
for name in summary waterfall dependence; do
    psql -X -q -At -v ON_ERROR_STOP=1 -c "${plots[$name]}" > "$out/$name.svg"
    size=$(grep -o 'width="[0-9]*" height="[0-9]*"' "$out/$name.svg" | head -1 | tr -dc '0-9 ' | tr ' ' ',')
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="${size%,}" \
        --screenshot="$out/$name.png" "file://$out/$name.svg" >/dev/null 2>&1 || true
done
/usr/bin/python3 - "$out" <<'PY'
import re
import sys

from PIL import Image

out = sys.argv[1]
RED, BLUE = (255, 13, 87), (30, 136, 229)


def near(p, c, tol=40):
    return all(abs(a - b) <= tol for a, b in zip(p[:3], c))


def bands(img, x0, x1, keep):
    """Runs of pixel rows that have a kept pixel between x0 and x1."""
    rows = [any(keep(img.getpixel((x, y))) for x in range(x0, x1)) for y in range(img.height)]
    return sum(1 for y in range(1, len(rows)) if rows[y] and not rows[y - 1])


def coloured(p):      # a dot of the beeswarm: saturated, between shap's blue and red
    return max(p[:3]) - min(p[:3]) > 90


fail = 0
expect = {"summary": 8, "waterfall": 8, "dependence": None}
for name, want in expect.items():
    svg = open(f"{out}/{name}.svg").read()
    w, h = map(int, re.search(r'width="(\d+)" height="(\d+)"', svg).groups())
    try:
        img = Image.open(f"{out}/{name}.png").convert("RGB")
    except OSError as exc:
        print(f"FAIL: {name}: no picture ({exc})")
        fail = 1
        continue
    ink = sum(1 for p in img.getdata() if p != (255, 255, 255)) / (img.width * img.height)
    checks = [("size", (img.width, img.height) == (w, h), f"{img.width}x{img.height}, SVG {w}x{h}"),
              ("not blank", ink > 0.02, f"{ink:.1%} of the pixels drawn")]
    if name == "summary":
        n = bands(img, 215, 690, coloured)
        checks.append(("a band of dots per feature", n == want, f"{n} bands, {want} features"))
    elif name == "waterfall":
        n = bands(img, 255, 730, lambda p: near(p, RED, 8) or near(p, BLUE, 8))
        checks.append(("a bar per feature", n == want, f"{n} bars, {want} features"))
    else:
        n = sum(1 for p in img.getdata() if near(p, BLUE, 60))
        checks.append(("its points", n > 500, f"{n} pixels of the points' blue"))
    for label, ok, detail in checks:
        print(f"{'ok' if ok else 'FAIL'}: {name}: {label} ({detail})")
        fail |= not ok
sys.exit(fail)
PY
status=$?
if [ "${TS_PLOTS_DOCS:-0}" = 1 ] && [ "$status" = 0 ]; then
    mkdir -p docs && for name in summary waterfall dependence; do cp "$out/$name.png" "docs/plot_$name.png"; done
fi
rm -rf "$out"
[ "$status" = 0 ] && echo "plots-check: PASS" || echo "plots-check: FAIL"
exit $status
