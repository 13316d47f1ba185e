#!/usr/bin/env bash
# tests/support/listener.sh: listens_on names the process that holds a
# port's listening socket, and no other; port_to_try stays below the
# kernel's ephemeral range.
set -uo pipefail
. "$(dirname "$0")/listener.sh"
passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $1"; fi; }

# A listener on a port the kernel picks; it says which, then holds it
# until its input closes.
coproc holder_proc { exec python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); sys.stdin.read()'; }
holder=$holder_proc_PID
read -r port <&"${holder_proc[0]}"
check "the holder listens on its port" 'listens_on "$holder" "$port"'
check "this shell does not" '! listens_on "$$" "$port"'
check "the holder does not listen on the next port" '! listens_on "$holder" "$((port + 1))"'
exec {holder_proc[1]}>&-
wait "$holder"
check "a process that has exited listens on nothing" '! listens_on "$holder" "$port"'

read -r low _ </proc/sys/net/ipv4/ip_local_port_range
ok=1
for _ in $(seq 1 200); do p=$(port_to_try 3); [ "$p" -ge 20000 ] && [ $((p + 3)) -le "$low" ] || ok=0; done
check "port_to_try 3 leaves three ports below $low" '[ "$ok" = 1 ]'
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
