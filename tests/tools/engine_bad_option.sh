#!/bin/sh
# kvblob-engine with a config whose option value the driver refuses: exit 3,
# and the message names the file, the line and column, and the option.
#   engine_bad_option.sh KVBLOB_ENGINE CONFIG_TOML
set -u
said=$("$1" --config "$2" 2>&1)
rc=$?
echo "$said"
want="$2:7:11: option 'workers' = \"many\" refused by driver memory"
if [ "$rc" -ne 3 ] || ! printf '%s\n' "$said" | grep -qF -- "$want"; then
    echo "FAIL: exit $rc; wanted exit 3 and: $want"
    exit 1
fi
echo "named at its line"
