#!/usr/bin/env bash
# Runs every tool, and the Python package, against a Redis server that
# requires a login (with_redis.sh auth), once with the password as an option
# and once in the URL's userinfo, through refusals (a wrong password, a
# closed port) and through successful runs; then greps everything they
# printed and wrote for each secret. Passes with "no secret printed".
#
#   secrets_nowhere.sh BIN_DIR PYTHONPATH PYTHON ENGINE_BIN
set -uo pipefail
bin=$1 pythonpath=$2 python=$3 engine=$4
: "${KVBLOB_REDIS_URL:?run under tests/redis/with_redis.sh auth}" "${KVBLOB_REDIS_PASSWORD:?}" "${KVBLOB_REDIS_ACL_PASSWORD:?}"
out=$(mktemp -d "${TMPDIR:-/tmp}/kvblob-secrets.XXXXXX")
trap 'rm -rf "$out"' EXIT
hostport=${KVBLOB_REDIS_URL#redis://}
wrong="wrong-$RANDOM$RANDOM$RANDOM"
user_url="redis://$KVBLOB_REDIS_ACL_USER:$KVBLOB_REDIS_ACL_PASSWORD@$hostport"
wrong_url="redis://$KVBLOB_REDIS_ACL_USER:$wrong@$hostport"
closed_url="redis://$KVBLOB_REDIS_ACL_USER:$wrong@127.0.0.1:1"
n=0
# run NAME COMMAND...: its stdout and stderr kept under $out; its exit
# status recorded, so a test can say which runs must have succeeded.
run() {
  local name=$1
  shift
  n=$((n + 1))
  "$@" >"$out/$name.out" 2>"$out/$name.err"
  echo $? >"$out/$name.rc"
}
must_pass() {
  for name in "$@"; do
    if [ "$(cat "$out/$name.rc")" != 0 ]; then
      echo "FAIL: $name exited $(cat "$out/$name.rc")"; cat "$out/$name.out" "$out/$name.err"; exit 1
    fi
  done
}
must_fail() {
  for name in "$@"; do
    if [ "$(cat "$out/$name.rc")" = 0 ]; then echo "FAIL: $name succeeded where it must be refused"; exit 1; fi
  done
}

for how in option url; do
  if [ $how = option ]; then good=(-o "url=$KVBLOB_REDIS_URL" -o "password=$KVBLOB_REDIS_PASSWORD"); bad=(-o "url=$KVBLOB_REDIS_URL" -o "password=$wrong")
  else good=(-o "url=$user_url"); bad=(-o "url=$wrong_url"); fi
  run info-$how "$bin/kvblob-info" redis "${good[@]}"
  run info-json-$how "$bin/kvblob-info" redis --json "${good[@]}"
  run info-bad-$how "$bin/kvblob-info" redis "${bad[@]}"
  run info-closed-$how "$bin/kvblob-info" redis -o "url=$closed_url" -o "password=$wrong"
  run bench-$how "$bin/kvblob-bench" --driver redis "${good[@]}" --sizes 4K --batch 4 --threads 1 --ops put,get \
    --duration 0.05 --plot "$out/bench-$how.svg"
  run bench-json-$how "$bin/kvblob-bench" --driver redis "${good[@]}" --sizes 4K --batch 4 --threads 1 --ops get \
    --duration 0.05 --json
  run bench-csv-$how "$bin/kvblob-bench" --driver redis "${good[@]}" --sizes 4K --batch 4 --threads 1 --ops probe \
    --duration 0.05 --csv
  run bench-bad-$how "$bin/kvblob-bench" --driver redis "${bad[@]}" --sizes 4K --batch 1 --threads 1 --ops put --duration 0.05
  run conformance-$how "$bin/kvblob-conformance" --driver redis "${good[@]}" --filter 'data.*' \
    --json "$out/conformance-$how.json" --junit "$out/conformance-$how.xml"
  run conformance-bad-$how "$bin/kvblob-conformance" --driver redis "${bad[@]}"
  must_pass info-$how info-json-$how bench-$how bench-json-$how bench-csv-$how conformance-$how
  must_fail info-bad-$how info-closed-$how bench-bad-$how conformance-bad-$how
done

# The engine, from a config file that holds both.
for how in option url; do
  if [ $how = option ]; then
    opts="url = \"$KVBLOB_REDIS_URL\"
password = \"$KVBLOB_REDIS_PASSWORD\""
    badopts="url = \"$KVBLOB_REDIS_URL\"
password = \"$wrong\""
  else
    opts="url = \"$user_url\""
    badopts="url = \"$wrong_url\""
  fi
  printf '[driver]\nname = "redis"\n[driver.options]\n%s\nprefix = "secrets-%s/"\n' "$opts" "$how" >"$out/engine-$how.toml.conf"
  printf '[driver]\nname = "redis"\n[driver.options]\n%s\n' "$badopts" >"$out/engine-bad-$how.toml.conf"
  cp "$out/engine-$how.toml.conf" "$out/engine-$how.toml"
  cp "$out/engine-bad-$how.toml.conf" "$out/engine-bad-$how.toml"
  run engine-$how "$engine" --config "$out/engine-$how.toml" --requests 4
  run engine-bad-$how "$engine" --config "$out/engine-bad-$how.toml" --requests 4
  must_pass engine-$how
  must_fail engine-bad-$how
done

# The Python package: a round trip, and the refusals it raises.
run python env PYTHONPATH="$pythonpath" "$python" - "$KVBLOB_REDIS_URL" "$KVBLOB_REDIS_PASSWORD" "$user_url" "$wrong_url" "$closed_url" "$wrong" "$out" <<'PY'
import sys
import kvblob
url, password, user_url, wrong_url, closed_url, wrong, out = sys.argv[1:]
plugin = kvblob.load("redis")
for options in ({"url": url, "password": password}, {"url": user_url}):
    with plugin.open(options) as driver:
        buf = bytearray(4096)
        region = driver.register(buf)
        op = driver.put([("secrets-py", region, 0, 64)])
        op.wait(30)
        print(driver.name, driver.capabilities, [r.status for r in op.results()], [r.message for r in op.results()])
        op.release()
        driver.remove(["secrets-py"]).wait(30)
    print(plugin.options)
for options in ({"url": url, "password": wrong}, {"url": wrong_url}, {"url": closed_url}):
    try:
        plugin.open(options)
        print("opened with", "a wrong login")
        sys.exit(1)
    except kvblob.LoadError as e:
        print(repr(e), e, e.stage, e.rule, e.file)
for config in (f"{out}/engine-option.toml", f"{out}/engine-url.toml", f"{out}/engine-bad-url.toml"):
    try:
        with kvblob.load(config).open() as driver:
            print(config, driver.name)
    except kvblob.Error as e:
        print(repr(e), e)
PY
must_pass python

# Every secret, and every run: none printed anywhere.
rm -f "$out"/*.toml "$out"/*.toml.conf  # the configs hold the secrets themselves
found=0
for secret in "$KVBLOB_REDIS_PASSWORD" "$KVBLOB_REDIS_ACL_PASSWORD" "$wrong"; do
  if grep -rlF -- "$secret" "$out"; then
    echo "FAIL: a secret was printed in the files above:"; grep -rnF -- "$secret" "$out" | head -20; found=1
  fi
done
[ $found = 0 ] || exit 1
# What the runs did print, for the reader of a passing log.
echo "runs: $n, outputs: $(ls "$out" | wc -l) files, $(cat "$out"/* | wc -c) bytes"
echo "no secret printed"
