#!/bin/sh
# Runs a command and requires its exit code and a line of its output, and,
# where UNWANTED is set, that its output does not hold that text.
#   [UNWANTED=TEXT] expect_exit.sh CODE SUBSTRING COMMAND [ARGS...]
set -u
code=$1 want=$2
shift 2
said=$("$@" 2>&1)
rc=$?
printf '%s\n' "$said"
if [ "$rc" -ne "$code" ] || ! printf '%s\n' "$said" | grep -qF -- "$want"; then
    echo "FAIL: exit $rc; wanted exit $code and: $want"
    exit 1
fi
if [ -n "${UNWANTED:-}" ] && printf '%s\n' "$said" | grep -qF -- "$UNWANTED"; then
    echo "FAIL: the output holds: $UNWANTED"
    exit 1
fi
echo "exit $code, as expected"
