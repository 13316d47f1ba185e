#!/bin/sh
# side_by_side.sh says what one run says: against the reference driver, its
# closing lines (what was left, the counts, the verdict) are one run's,
# word for word; against a driver that admits nothing, it fails as one run
# fails, and no shard's own CONFORMANT line stands alone.
# Usage: side_by_side_check.sh RUNNER FAILING_DRIVER
# Prints "side_by_side.sh says what one run says" when both hold.
set -u
runner=$1 failing=$2
here=$(dirname "$0")
fail() { echo "side_by_side_check.sh: $1"; exit 1; }

# Three shards of part of the battery, against one run of the same part.
one=$("$runner" --driver memory --filter 'data.*' --filter 'admission.*' 2>&1)
three=$("$here/side_by_side.sh" 3 "$runner" --driver memory --filter 'data.*' --filter 'admission.*' 2>&1) ||
  fail "three shards of a conformant driver exited $?: $three"
closing() { grep -E '^(left in the store: |[0-9]+ passed, |CONFORMANT|NOT CONFORMANT)' ; }
[ "$(echo "$one" | closing)" = "$(echo "$three" | closing)" ] ||
  fail "the closing lines differ; one run: $(echo "$one" | closing) three shards: $(echo "$three" | closing)"

# A driver that fails every check it is given, in each shard.
if broken=$("$here/side_by_side.sh" 3 "$runner" --driver "$failing" --filter 'data.*' 2>&1); then
  fail "three shards of a failing driver exited 0: $broken"
fi
echo "$broken" | grep -q '^CONFORMANT$' && fail "a failing driver's shards printed a CONFORMANT line of their own"
[ "$(echo "$broken" | grep -E '^[0-9]+ passed, ' | tail -n 1 | cut -d, -f2)" = \
  "$("$runner" --driver "$failing" --filter 'data.*' 2>&1 | grep -E '^[0-9]+ passed, ' | cut -d, -f2)" ] ||
  fail "the failures of three shards do not add up to one run's: $broken"
echo "side_by_side.sh says what one run says"
