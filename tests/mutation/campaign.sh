#!/bin/bash
# Runs every mutant of mutants.txt against the checks that should catch it
# and prints the kill rate per contract rule. Fails when a rule has fewer
# than three mutants, when the reference build does not pass those checks,
# when a mutant survives without being listed in equivalent.txt (with the
# reason), when a mutant listed there is killed after all, or when
# docs/vendor-guide.md or docs/testing.md names another count of mutants.
# Usage: campaign.sh RUNNER MUTANT_LIBRARY MUTANTS EQUIVALENT CONTRACT
# (CONTRACT is docs/contract.md: every rule it defines but the loader's
# R-LOAD-*, which the host enforces, is a rule a driver can break.)
# KVBLOB_MUTATION_JOBS sets how many mutants run at once (default 4).
set -u
runner=$1 library=$2 mutants=$3 equivalent=$4 contract=$5
jobs=${KVBLOB_MUTATION_JOBS:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
status=0
complain() { echo "campaign: $*"; status=1; }

# mutants.txt: "ID RULE CHECK[,CHECK...] OPTION[,OPTION...]|- what the vendor got wrong"
grep -v '^\s*#' "$mutants" | grep -v '^\s*$' > "$work/list"
grep -v '^\s*#' "$equivalent" | grep -v '^\s*$' | awk '{print $1}' > "$work/equivalent"
[ -s "$work/list" ] || { echo "campaign: $mutants lists no mutant"; exit 1; }
if dup=$(awk '{print $1}' "$work/list" | sort | uniq -d) && [ -n "$dup" ]; then complain "$mutants names a mutant twice: $dup"; fi

# Every rule of the contract has at least three mutants, and every mutant names a rule of it.
grep -oE '^- \*\*R-[A-Z]+-[0-9]+\*\*:' "$contract" | sed -E 's/^- \*\*(R-[A-Z]+-[0-9]+).*/\1/' |
    grep -v '^R-LOAD-' > "$work/rules"
[ -s "$work/rules" ] || { echo "campaign: no rule defined in $contract"; exit 1; }
while read -r rule; do
    n=$(awk -v r="$rule" '$2 == r' "$work/list" | wc -l)
    [ "$n" -ge 3 ] || complain "rule $rule has $n mutant(s); the campaign wants at least 3"
done < "$work/rules"
# The guides name how many mutants there are: this list's count (a number
# after a space or a line's start: "R-CAP-2 mutants" names a rule).
for guide in vendor-guide.md testing.md; do
    said=$(grep -oE '(^|[[:space:]])[0-9]+ mutants' "$(dirname "$contract")/$guide" | head -1 | grep -oE '[0-9]+ mutants')
    [ "$said" = "$(wc -l < "$work/list") mutants" ] ||
        complain "docs/$guide says '${said:-no count of mutants}'; $mutants lists $(wc -l < "$work/list")"
done
awk '{print $2}' "$work/list" | sort -u | while read -r rule; do
    grep -qx "$rule" "$work/rules" || echo "campaign: $mutants names $rule, which is not a contract rule"
done | grep . && status=1

# One run of the runner: the mutant (or none), its checks, its options.
run() {  # run MUTANT CHECKS OPTIONS OUT
    local args=() c o
    IFS=, read -ra c <<< "$2"
    for x in "${c[@]}"; do args+=(--filter "$x"); done
    if [ "$3" != "-" ]; then
        IFS=, read -ra o <<< "$3"
        for x in "${o[@]}"; do args+=(--option "$x"); done
    fi
    KVBLOB_MUTANT="$1" "$runner" --driver "$library" --timeout 30 "${args[@]}" > "$4" 2>&1
}
export -f run
export runner library

# The reference (no mutant) passes every check the campaign uses, with each option set.
awk '{print $4}' "$work/list" | sort -u > "$work/option_sets"
while read -r opts; do
    checks=$(awk -v o="$opts" '$4 == o {print $3}' "$work/list" | tr ',' '\n' | sort -u | paste -sd, -)
    if ! run "" "$checks" "$opts" "$work/reference.out"; then
        complain "the reference build does not pass the campaign's checks (options $opts):"
        grep -E '^\[(FAIL|CRASH|TIMEOUT)\]' "$work/reference.out"
    fi
done < "$work/option_sets"

# Every mutant, $jobs at a time: killed when the run fails a check.
awk '{print $1, $3, $4}' "$work/list" |
    xargs -P "$jobs" -L 1 bash -c 'run "$0" "$1" "$2" "'"$work"'/$0.out"; echo $? > "'"$work"'/$0.rc"'

# A kill may hang on a race (two threads meeting in a window): a mutant that
# survived runs twice more, alone, before it counts as a survivor.
killed() { [ "$(cat "$work/$1.rc" 2>/dev/null)" = 1 ] && grep -qE '^\[(FAIL|CRASH|TIMEOUT)\]' "$work/$1.out"; }
while read -r id checks opts; do
    for _ in 1 2; do
        killed "$id" && break
        run "$id" "$checks" "$opts" "$work/$id.out"; echo $? > "$work/$id.rc"
    done
done < <(awk '{print $1, $3, $4}' "$work/list")

printf '%-10s %7s %6s %10s %8s  %s\n' rule mutants killed equivalent survived "kill rate (after equivalents)"
killed_all=0 counted_all=0
while read -r rule; do
    total=0 killed=0 equiv=0 survived=0
    while read -r id _; do
        total=$((total + 1))
        rc=$(cat "$work/$id.rc" 2>/dev/null || echo 0)
        is_equiv=0
        grep -qx "$id" "$work/equivalent" && is_equiv=1
        if killed "$id"; then
            killed=$((killed + 1))
            [ $is_equiv = 1 ] && complain "mutant $id is listed as equivalent but was killed by: $(grep -E '^\[(FAIL|CRASH|TIMEOUT)\]' "$work/$id.out" | head -1)"
            echo "$id killed by $(grep -E '^\[(FAIL|CRASH|TIMEOUT)\]' "$work/$id.out" | head -1)" >> "$work/kills"
        elif [ $is_equiv = 1 ]; then
            equiv=$((equiv + 1))
        else
            survived=$((survived + 1))
            complain "mutant $id ($rule) survived (exit $rc): $(tail -1 "$work/$id.out")"
        fi
    done < <(awk -v r="$rule" '$2 == r' "$work/list")
    counted=$((total - equiv))
    killed_all=$((killed_all + killed)) counted_all=$((counted_all + counted))
    rate=$([ $counted -gt 0 ] && echo "$((100 * killed / counted))%" || echo "-")
    printf '%-10s %7d %6d %10d %8d  %s\n' "$rule" $total $killed $equiv $survived "$rate"
done < "$work/rules"
[ -n "${KVBLOB_MUTATION_VERBOSE:-}" ] && cat "$work/kills"
total_rate=$((counted_all ? 100 * killed_all / counted_all : 0))
echo "$(wc -l < "$work/list") mutants, $killed_all of $counted_all killed (equivalents set aside): kill rate ${total_rate}%," \
     "in $(( $(date +%s) - start )) s with $jobs jobs"
[ $status = 0 ] && [ "$killed_all" = "$counted_all" ] || { echo "campaign: FAILED"; exit 1; }
