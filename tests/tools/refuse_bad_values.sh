#!/bin/sh
# Every size, count and duration a tool accepts is checked before anything
# is allocated: each bad value below must exit 2 with exactly one line on
# stderr naming the flag and why, and nothing on stdout.
#   refuse_bad_values.sh BIN_DIR CONFIG_TOML
set -u
bin=$1
config=$2
memory=$(( $(getconf _PHYS_PAGES) * $(getconf PAGESIZE) ))
half=$(( memory / 2 ))
failures=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

# expect SUBSTRING TOOL ARGS...
expect() {
    said=$1
    shift
    "$bin/$@" >"$out" 2>"$err"
    rc=$?
    lines=$(wc -l <"$err")
    if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || [ -s "$out" ] || ! grep -qF -- "$said" "$err"; then
        echo "FAIL: $* -> exit $rc, $lines stderr line(s), wanted exit 2 and one line with '$said':"
        sed 's/^/    /' "$err" "$out"
        failures=$((failures + 1))
    else
        echo "ok:   $* -> $(cat "$err")"
    fi
}

expect "--max-bytes: '100T' (100.0 TiB) is more than" kvblob-soak --driver memory --max-bytes 100T
expect "--max-bytes: '-4K' is not a size" kvblob-soak --driver memory --max-bytes -4K
expect "--max-bytes: '-4K' is not a size" kvblob-soak --driver memory --max-bytes=-4K
expect "--max-bytes: '0' is not a positive size" kvblob-soak --driver memory --max-bytes 0
expect "--threads: '0' is not a positive whole number" kvblob-soak --driver memory --threads 0
expect "--threads: '257' is more than 256" kvblob-soak --driver memory --threads 257
expect "--ops: '-1' is not a positive whole number" kvblob-soak --driver memory --ops=-1
expect "--seconds: '1e9' is not a positive whole number" kvblob-soak --driver memory --seconds 1e9
expect "--seconds: '99999999999' is more than" kvblob-soak --driver memory --seconds 99999999999
expect "--keys: '18446744073709551616' is too large" kvblob-soak --driver memory --keys 18446744073709551616

expect "--block-bytes: '1T' (1.0 TiB) is more than" kvblob-engine --config "$config" --block-bytes 1T
expect "need" kvblob-engine --config "$config" --block-bytes "$half"
expect "more than this machine's memory" kvblob-engine --config "$config" --requests 1073741824 --turn-tokens 4294967296
expect "--requests: '0' is not a positive whole number" kvblob-engine --config "$config" --requests 0
expect "--block-tokens: '-16' is not a positive whole number" kvblob-engine --config "$config" --block-tokens=-16
expect "--system-tokens: 'x' is not a whole number" kvblob-engine --config "$config" --system-tokens x
expect "--block-bytes: '64Q' is not a size" kvblob-engine --config "$config" --block-bytes 64Q

expect "--sizes: '-4K' is not a size" kvblob-bench --driver memory --sizes -4K
expect "--sizes: '-4K' is not a size" kvblob-bench --driver memory --sizes=-4K
expect "--sizes: '-4K' is not a size" kvblob-bench --driver memory --sizes 4K,-4K
expect "--sizes: '100T' (100.0 TiB) is more than" kvblob-bench --driver memory --sizes 4K,100T
expect "--duration: 'nan' is not a positive, finite number of seconds" kvblob-bench --driver memory --duration nan
expect "--duration: 'inf' is not a positive, finite number of seconds" kvblob-bench --driver memory --duration inf
expect "--duration: '-1' is not a positive, finite number of seconds" kvblob-bench --driver memory --duration=-1
expect "--duration: '1e12' seconds is more than a year" kvblob-bench --driver memory --duration 1e12
expect "--batch: '0' is not a positive whole number" kvblob-bench --driver memory --batch 0
expect "--threads: '100000' is more than 1024" kvblob-bench --driver memory --threads 100000
expect "--max-memory: '100T' (100.0 TiB) is more than" kvblob-bench --driver memory --max-memory 100T
expect "--bytes: '-1' is not a size" kvblob-bench --driver memory --bytes=-1

expect "--timeout: '0' is not a positive whole number" kvblob-conformance --driver memory --timeout 0
expect "--timeout: 'nan' is not a positive whole number" kvblob-conformance --driver memory --timeout nan
expect "--repeat: '-2' is not a positive whole number" kvblob-conformance --driver memory --repeat=-2
expect "--run-timeout: '0' is not a positive whole number" kvblob-conformance --driver memory --run-timeout 0
expect "--give-up-after: '-1' is not a whole number" kvblob-conformance --driver memory --give-up-after=-1

if [ "$failures" -ne 0 ]; then
    echo "$failures case(s) failed"
    exit 1
fi
echo "every bad value refused with exit 2 and one line"
