#!/usr/bin/env bash
# The installed-wheel check (`make wheel-check`, run by CI after `make test`): build a wheel of this
# checkout, install it (not editable) with the test tools in a fresh venv outside the checkout, and
# from there run the buffer and scoring tests and the CLI's score (committed and paper buffers),
# plan and a scripted synthesis. Proves that the package carries all its data.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/codeworld-wheel.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

echo "== building the wheel"
# Its own build folder, so that the checkout's editable build in build/ is left alone.
"$PYTHON" -m pip wheel -q --no-deps -C build-dir="$WORK/build" -w "$WORK/dist" "$REPO"
echo "== installing it in a fresh venv"
"$PYTHON" -m venv "$WORK/venv"
PY="$WORK/venv/bin/python"
"$PY" -m pip install -q --upgrade pip
"$PY" -m pip install -q "$WORK"/dist/codeworld-*.whl pytest pytest-timeout psutil
CW="$WORK/venv/bin/codeworld"

# The package must come from site-packages, not from the checkout.
"$PY" -c "import codeworld, sys; p = codeworld.__file__; print('codeworld from', p); \
sys.exit(0 if '/site-packages/' in p and not p.startswith('$REPO/') else 1)"

echo "== tests against the installed package"
export CODEWORLD_CACHE_DIR="$WORK/cache"
"$PY" -m pytest -q -p no:cacheprovider --rootdir "$REPO" -c "$REPO/pyproject.toml" \
    "$REPO/tests/test_buffers.py" "$REPO/tests/test_scoring.py"

echo "== the CLI from the installed package"
MODEL="$REPO/tests/models/cartpole_functional.py"
"$CW" score CartPole-v1 "$MODEL" --json > committed.json
"$CW" score CartPole-v1 "$MODEL" --buffer paper --json > paper.json
"$PY" - <<'PYEOF'
import json
for name in ("committed", "paper"):
    record = json.load(open(f"{name}.json"))
    assert record["status"] == "ok" and record["score"] >= 0.99, (name, record["score"])
    assert "/site-packages/codeworld/data/" in record["buffer"], record["buffer"]
    print(f"score on the {name} buffer: {record['score']:.4f} ({record['n_transitions']} transitions)")
PYEOF
"$CW" plan CartPole-v1 "$MODEL" --episodes 2 --max-steps 20 --json > plan.json
"$PY" -c "import json; r = json.load(open('plan.json')); print('plan: model', r['return_model'], \
'random', r['return_random'], 'oracle', r['return_oracle']); assert r['model']['status'] == 'ok'"
"$PY" -c "import json; print(json.dumps(['\`\`\`python\n' + open('$MODEL').read() + '\`\`\`']))" > script.json
"$CW" synthesize CartPole-v1 --method gif-mcts --llm "scripted:$WORK/script.json" --budget 1 --out run > synth.txt
cat synth.txt
test -f run/best_model.py
echo "== the installed wheel works"
